/* tools/dump/dumpfile.c: loader for collscope JSONL dump files (see dumpfile.h for the
 * robustness contract and DESIGN.md "Dump files" for the schema): the set's files found,
 * read by a pool of threads (whole, or streamed in rounds), the job picked, salvage merged,
 * files sorted, and freed. The parts: tools/dump/dump_reader.c (one file), dump_records.c (one
 * line), dump_jobs.c, dump_salvage.c, dump_instances.c, dump_strings.c. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dump_internal.h"
#include "readpool.h"
#include "xalloc.h"

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_files(const void *a, const void *b) {
  const struct cs_dumpfile *x = a, *y = b;
  unsigned rx = (unsigned)x->hdr.rank, ry = (unsigned)y->hdr.rank; /* -1 sorts last */
  if (rx != ry) return rx < ry ? -1 : 1;
  int c = strcmp(x->hdr.host, y->hdr.host);
  if (c) return c;
  if (x->hdr.pid != y->hdr.pid) return x->hdr.pid < y->hdr.pid ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* the read pieces' bound (cs_dumpset_stream): the largest file at discovery */
static void note_size(struct cs_dumpset *set, off_t size) {
  if (size > 0 && (uint64_t)size > set->largest_file) set->largest_file = (uint64_t)size;
}

static void add_file(struct cs_dumpset *set, size_t *cap, const char *path) {
  dump_grow((void **)&set->files, cap, set->nfiles, sizeof *set->files);
  struct cs_dumpfile *f = &set->files[set->nfiles++];
  memset(f, 0, sizeof *f);
  f->path = xstrdup(path);
  const char *slash = strrchr(f->path, '/');
  f->name = slash ? slash + 1 : f->path;
}

void dump_free_file(struct cs_dumpfile *f) {
  free(f->path);
  free(f->ops);
  free(f->xfers);
  free(f->comms);
  free(f->hangs);
  free(f->summaries);
  free(f->windows);
  free(f->gaps);
  free(f->links);
  free(f->healths);
  free(f->hports);
}

struct cs_dumpset *cs_dumpset_load(const char *path) {
  return cs_dumpset_load_job(path, NULL);
}

/* A new set with the files of PATH (a directory's *.jsonl and *.jsonl.zst in name order, or one file), not
 * read yet; fatal (with the error) when there are none. */
static struct cs_dumpset *discover(const char *path) {
  struct cs_dumpset *set = calloc(1, sizeof *set);
  if (!set) oom();
  set->pool = dump_pool_new();
  set->path = xstrdup(path);
  set->job = dump_intern(set->pool, "");
  size_t cap = 0;

  struct stat st;
  if (stat(path, &st) != 0) {
    dump_add_error(set, "%s: %s", path, strerror(errno));
    set->fatal = true;
    return set;
  }
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) {
      dump_add_error(set, "%s: cannot open directory: %s", path, strerror(errno));
      set->fatal = true;
      return set;
    }
    char **names = NULL;
    size_t nn = 0, ncap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      size_t l = strlen(de->d_name);
      if (!(l > 6 && strcmp(de->d_name + l - 6, ".jsonl") == 0) && !(l > 10 && strcmp(de->d_name + l - 10, ".jsonl.zst") == 0))
        continue;
      char *full = NULL;
      if (asprintf(&full, "%s/%s", path, de->d_name) < 0) oom();
      struct stat fst;
      if (stat(full, &fst) != 0 || !S_ISREG(fst.st_mode)) {
        free(full);
        continue;
      }
      dump_grow((void **)&names, &ncap, nn, sizeof *names);
      names[nn++] = full;
      note_size(set, fst.st_size);
    }
    closedir(d);
    if (nn) qsort(names, nn, sizeof *names, cmp_names); /* qsort(NULL, 0) is UB */
    for (size_t i = 0; i < nn; i++) {
      add_file(set, &cap, names[i]);
      free(names[i]);
    }
    free(names);
    if (set->nfiles == 0) {
      dump_add_error(set, "%s: no dump files (*.jsonl, *.jsonl.zst) found", path);
      set->fatal = true;
      return set;
    }
  } else {
    note_size(set, st.st_size);
    add_file(set, &cap, path);
  }

  return set;
}

/* Every file read: errors in file order, the job picked, salvage merged, files sorted,
 * record file indices set. */
static void finish_set(struct cs_dumpset *set, struct freader *fr, const char *job) {
  for (size_t i = 0; i < set->nfiles; i++) {
    if (!fr[i].ok) set->fatal = true;
    dump_rd_flush_errors(&fr[i]);
  }
  if (!dump_select_job(set, job)) set->fatal = true;
  dump_merge_salvaged(set);
  if (set->nfiles) qsort(set->files, set->nfiles, sizeof *set->files, cmp_files);
  for (size_t i = 0; i < set->nfiles; i++) {
    struct cs_dumpfile *f = &set->files[i];
    for (size_t k = 0; k < f->nops; k++) f->ops[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nxfers; k++) f->xfers[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->ncomms; k++) f->comms[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nhangs; k++) f->hangs[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nsummaries; k++) f->summaries[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nwindows; k++) f->windows[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->ngaps; k++) f->gaps[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nlinks; k++) f->links[k].file = (uint32_t)i;
    for (size_t k = 0; k < f->nhealths; k++) f->healths[k].file = (uint32_t)i;
  }
}

struct load_job {
  struct freader *fr;
};
static void load_one(void *ctx, size_t i, unsigned worker) {
  (void)worker;
  struct load_job *j = ctx;
  dump_load_file(&j->fr[i]);
}

struct cs_dumpset *cs_dumpset_load_job(const char *path, const char *job) {
  return cs_dumpset_load_jobs(path, job, 0);
}

struct cs_dumpset *cs_dumpset_load_jobs(const char *path, const char *job, unsigned jobs) {
  struct cs_dumpset *set = discover(path);
  if (set->fatal) return set;
  struct freader *fr = calloc(set->nfiles, sizeof *fr);
  if (!fr) oom();
  for (size_t i = 0; i < set->nfiles; i++) dump_rd_start(&fr[i], set, &set->files[i], i);
  struct load_job j = {fr};
  cs_pool_run(jobs ? jobs : cs_pool_default_jobs(), set->nfiles, load_one, &j);
  finish_set(set, fr, job);
  free(fr);
  return set;
}

/* ---------- streaming: every file a piece at a time, in rounds ---------- */

struct stream_job {
  struct freader *fr;
  size_t *live, chunk, wcap;
  char **wbuf; /* one piece buffer per reading thread */
};
static void stream_one(void *ctx, size_t i, unsigned worker) {
  struct stream_job *j = ctx;
  struct freader *fr = &j->fr[j->live[i]];
  fr->worker = worker;
  if (!j->wbuf[worker]) j->wbuf[worker] = xrealloc(NULL, j->wcap);
  dump_rd_piece(fr, fr->header_only ? 4096 : j->chunk, j->wbuf[worker], j->wcap);
}

struct cs_dumpset *cs_dumpset_stream(const char *path, const char *job, const struct cs_stream_ops *ops) {
  struct cs_dumpset *set = discover(path);
  if (set->fatal) return set;
  size_t n = set->nfiles;
  struct freader *fr = calloc(n, sizeof *fr);
  size_t *live = calloc(n, sizeof *live);
  bool *done = calloc(n, sizeof *done);
  if (!fr || !live || !done) oom();
  for (size_t i = 0; i < n; i++) dump_rd_start(&fr[i], set, &set->files[i], i);
  /* the text read per round over all files is bounded by `budget` */
  size_t budget = ops->budget ? ops->budget : (size_t)64 << 20;
  size_t chunk = budget / n;
  if (chunk < ((size_t)16 << 10)) chunk = (size_t)16 << 10;
  if (chunk > ((size_t)1 << 20)) chunk = (size_t)1 << 20;
  /* no piece larger than the largest file was when found (plus one byte, to see its end in
   * one read), 4 KiB at least: a set of small files gets small buffers. A file that grew
   * since is read in more pieces, with the same line bound (wcap keeps CS_DUMP_LINE_MAX). */
  if (set->largest_file < chunk) chunk = set->largest_file + 1 < 4096 ? 4096 : (size_t)set->largest_file + 1;
  unsigned jobs = ops->jobs ? ops->jobs : cs_pool_default_jobs();
  struct stream_job j = {fr, live, chunk, chunk + CS_DUMP_LINE_MAX + 2, calloc(jobs, sizeof(char *))};
  if (!j.wbuf) oom();
  /* the header round: line 1 of every file, then the job, and whether salvage must merge */
  for (size_t i = 0; i < n; i++) {
    live[i] = i;
    fr[i].header_only = true;
  }
  cs_pool_run(jobs, n, stream_one, &j);
  for (size_t i = 0; i < n; i++) fr[i].header_only = false;
  dump_mark_job(set, fr, job);
  if (!ops->own_salvage && dump_salvage_pairs(set, fr)) {
    for (size_t i = 0; i < n; i++) {
      dump_rd_drop(&fr[i]);
      for (size_t k = 0; k < fr[i].nerrors; k++) free(fr[i].errors[k]);
      free(fr[i].errors);
    }
    free(fr);
    free(live);
    free(done);
    for (unsigned k = 0; k < jobs; k++) free(j.wbuf[k]);
    free(j.wbuf);
    cs_dumpset_free(set);
    set = calloc(1, sizeof *set);
    if (!set) oom();
    set->whole = true;
    return set;
  }
  if (ops->begin) ops->begin(ops->ctx, n);
  for (size_t i = 0; i < n; i++) { /* from now on ops go to the sink; a headerless file's line 1 too */
    struct cs_dumpfile *f = &set->files[i];
    fr[i].sink = ops;
    for (size_t k = 0; k < f->nops && !fr[i].excluded; k++) ops->op(ops->ctx, 0, i, f, &f->ops[k]);
    free(f->ops);
    f->ops = NULL;
    f->nops = f->op_cap = 0;
  }
  for (;;) {
    size_t nl = 0;
    for (size_t i = 0; i < n; i++)
      if (!fr[i].eof) live[nl++] = i;
    for (size_t i = 0; i < n; i++) done[i] = fr[i].eof;
    if (ops->round) ops->round(ops->ctx, done, n); /* also after the header round */
    if (!nl) break;
    cs_pool_run(jobs, nl, stream_one, &j);
  }
  finish_set(set, fr, job);
  free(fr);
  free(live);
  free(done);
  for (unsigned k = 0; k < jobs; k++) free(j.wbuf[k]);
  free(j.wbuf);
  return set;
}

struct cs_dumpset *cs_dumpset_load_cli(const char *path, const char *job) {
  struct cs_dumpset *set = cs_dumpset_load_job(path, job);
  cs_dumpset_print_errors(set, stderr);
  if (set->fatal) {
    cs_dumpset_free(set);
    return NULL;
  }
  return set;
}

void cs_dumpset_free(struct cs_dumpset *set) {
  if (!set) return;
  for (size_t i = 0; i < set->nfiles; i++) dump_free_file(&set->files[i]);
  free(set->files);
  for (size_t i = 0; i < set->nerrors; i++) free(set->errors[i]);
  free(set->errors);
  dump_pool_free(set->pool);
  free(set->path);
  free(set);
}
