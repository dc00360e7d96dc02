/* tools/report/section_comms.c: the report's "comms" section: one row per communicator
 * (size, ranks seen, ops, collective instances, bytes, GPU time). */
#include <stdlib.h>

#include "report.h"
#include "report_agg.h"
#include "xalloc.h"

static void build_comms(struct report *r) {
  struct report_agg *a = r->agg;
  if (!a) return;
  r->comms = xcalloc(a->ncomms, sizeof *r->comms);
  for (size_t i = 0; i < a->ncomms; i++)
    r->comms[r->ncomms++] = (struct comm_row){a->comms[i].comm, a->comms[i].size, a->comms[i].ranks, a->comms[i].ops,
                                              a->comms[i].instances, a->comms[i].bytes, a->comms[i].gpu_ms};
}

static void text_comms(const struct report *r, FILE *o) {
  fprintf(o, "\n# Communicators\n");
  fprintf(o, "# %-16s %6s %6s %8s %10s %16s %13s\n", "comm", "size", "ranks", "ops", "instances",
          "bytes", "gpu_time(ms)");
  char hex[17];
  for (size_t i = 0; i < r->ncomms; i++) {
    const struct comm_row *c = &r->comms[i];
    fprintf(o, "  %-16s %6d %6zu %8zu %10zu %16llu %13.3f\n", cs_comm_hex(c->comm, hex), c->size,
            c->ranks, c->ops, c->instances, (unsigned long long)c->bytes, c->gpu_ms);
  }
  if (!r->ncomms) fprintf(o, "  (no communicators)\n");
}

static json_t *json_comms(const struct report *r) {
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < r->ncomms; i++) {
    const struct comm_row *c = &r->comms[i];
    json_t *o = json_object();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(c->comm, hex)));
    json_object_set_new(o, "size", json_integer(c->size));
    json_object_set_new(o, "ranks", jcount(c->ranks));
    json_object_set_new(o, "ops", jcount(c->ops));
    json_object_set_new(o, "instances", jcount(c->instances));
    json_object_set_new(o, "bytes", jbytes(c->bytes));
    json_object_set_new(o, "gpu_time_ms", json_real(c->gpu_ms));
    json_array_append_new(a, o);
  }
  return a;
}

static void free_comms(struct report *r) { free(r->comms); }

const struct report_section report_section_comms = {"comms", build_comms, text_comms, json_comms, free_comms};
