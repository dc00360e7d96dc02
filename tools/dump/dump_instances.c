/* tools/dump/dump_instances.c: the op records of a loaded set grouped into collective instances,
 * (comm, seq) with one record per member rank (cs_group_instances, tools/dump/dumpfile.h). */
#include <stdlib.h>
#include <string.h>

#include "dump_internal.h"
#include "xalloc.h"

static int cmp_inst(const void *a, const void *b) {
  const struct cs_op_rec *x = *(const struct cs_op_rec *const *)a;
  const struct cs_op_rec *y = *(const struct cs_op_rec *const *)b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  if (x->comm_rank != y->comm_rank) return x->comm_rank < y->comm_rank ? -1 : 1;
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

int cs_group_instances(const struct cs_dumpset *set, struct cs_instances *out) {
  memset(out, 0, sizeof *out);
  size_t total = 0;
  for (size_t i = 0; i < set->nfiles; i++) total += set->files[i].nops;
  if (total == 0) return 0;
  out->storage = xrealloc(NULL, total * sizeof *out->storage);
  size_t k = 0;
  for (size_t i = 0; i < set->nfiles; i++)
    for (size_t j = 0; j < set->files[i].nops; j++)
      if (set->files[i].ops[j].seq >= 0) out->storage[k++] = &set->files[i].ops[j];
  total = k;
  if (total) qsort(out->storage, total, sizeof *out->storage, cmp_inst);
  size_t cap = 0;
  for (size_t i = 0; i < total;) {
    size_t j = i + 1;
    while (j < total && out->storage[j]->comm == out->storage[i]->comm &&
           out->storage[j]->seq == out->storage[i]->seq)
      j++;
    dump_grow((void **)&out->v, &cap, out->n, sizeof *out->v);
    struct cs_instance *in = &out->v[out->n++];
    memset(in, 0, sizeof *in);
    in->comm = out->storage[i]->comm;
    in->seq = out->storage[i]->seq;
    in->op_name = out->storage[i]->op_name;
    in->n = j - i;
    in->ops = &out->storage[i];
    for (size_t m = i; m < j; m++) {
      if (out->storage[m]->comm_size > in->comm_size) in->comm_size = out->storage[m]->comm_size;
      if (out->storage[m]->op_name != in->op_name) in->mixed_ops = true; /* interned */
    }
    i = j;
  }
  return 0;
}

void cs_instances_free(struct cs_instances *inst) {
  free(inst->v);
  free(inst->storage);
  memset(inst, 0, sizeof *inst);
}
