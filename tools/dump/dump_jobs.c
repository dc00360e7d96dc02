/* tools/dump/dump_jobs.c: one job per dump set: the files of the job picked with --job, or of the
 * only job found; several jobs and none picked refuse the set with a message naming them.
 * Part of the reader (tools/dump/dumpfile.h). */
#include <stdlib.h>
#include <string.h>

#include "dump_internal.h"
#include "xalloc.h"

struct job_count {
  const char *job; /* interned */
  size_t files;
};

/* Keeps the files of `job` (NULL: the only job found). Returns false (message added) when the
 * set holds several jobs and none was picked, or the picked one is absent. */
bool dump_select_job(struct cs_dumpset *set, const char *job) {
  struct job_count *jobs = xrealloc(NULL, (set->nfiles + 1) * sizeof *jobs);
  size_t nj = 0, unnamed = 0;
  for (size_t i = 0; i < set->nfiles; i++) {
    const char *j = set->files[i].hdr.job;
    if (!*j) {
      unnamed++;
      continue;
    }
    size_t k = 0;
    while (k < nj && jobs[k].job != j) k++; /* interned */
    if (k == nj) jobs[nj++] = (struct job_count){j, 0};
    jobs[k].files++;
  }
  bool ok = true;
  const char *keep = NULL;
  if (job) {
    keep = dump_intern(set->pool, job);
  } else if (nj == 1) {
    keep = jobs[0].job;
  } else if (nj > 1) {
    char *list = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&list, &len);
    if (!m) oom();
    char b[256];
    for (size_t k = 0; k < nj; k++)
      fprintf(m, "%s%s (%zu file%s)", k ? ", " : "", cs_text_safe(jobs[k].job, b, sizeof b), jobs[k].files,
              jobs[k].files == 1 ? "" : "s");
    if (unnamed) fprintf(m, ", %zu file%s without a job id", unnamed, unnamed == 1 ? "" : "s");
    fclose(m);
    dump_add_error(set, "%s: dumps of %zu jobs, not mixed: %s; pick one with --job ID", set->path, nj, list);
    free(list);
    ok = false;
  }
  set->job = keep ? keep : dump_intern(set->pool, "");
  if (ok && keep) {
    size_t w = 0;
    for (size_t i = 0; i < set->nfiles; i++) {
      struct cs_dumpfile *f = &set->files[i];
      bool mine = f->hdr.job == keep || (!job && !*f->hdr.job);
      if (mine) {
        set->files[w++] = *f;
      } else {
        dump_free_file(f);
        set->other_job_files++;
      }
    }
    set->nfiles = w;
    if (!w) {
      char b[256];
      dump_add_error(set, "%s: no dumps of job %s", set->path, cs_text_safe(keep, b, sizeof b));
      ok = false;
    } else if (set->other_job_files) {
      char b[256];
      dump_add_error(set, "%s: %zu file%s of other jobs (or without a job id) left out, reporting job %s", set->path,
                     set->other_job_files, set->other_job_files == 1 ? "" : "s", cs_text_safe(keep, b, sizeof b));
    }
  }
  free(jobs);
  return ok;
}

/* dump_select_job()'s choice made on the headers, before the records are read: the files it will
 * leave out are marked excluded. All are when it will refuse the set. */
void dump_mark_job(struct cs_dumpset *set, struct freader *fr, const char *job) {
  const char *keep = job ? dump_intern(set->pool, job) : NULL;
  if (!job) {
    size_t nj = 0;
    for (size_t i = 0; i < set->nfiles; i++) {
      const char *j = set->files[i].hdr.job;
      if (!*j || j == keep) continue;
      if (!keep)
        keep = j, nj = 1;
      else
        nj = 2;
    }
    if (nj > 1) { /* several jobs, none picked: refused, nothing to read */
      for (size_t i = 0; i < set->nfiles; i++) dump_rd_drop(&fr[i]);
      return;
    }
    if (!keep) return; /* no job ids at all: every file */
  }
  for (size_t i = 0; i < set->nfiles; i++) {
    const struct cs_dumpfile *f = &set->files[i];
    bool mine = f->hdr.job == keep || (!job && !*f->hdr.job);
    if (!mine) dump_rd_drop(&fr[i]);
  }
}
