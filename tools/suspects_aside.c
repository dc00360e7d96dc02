/* tools/suspects_aside.c: the straggler findings `collscope suspects` charges to no node: one
 * the report's balance section explains by the job's own data (uneven_data: a larger shard;
 * data_loader: the GPU waits for its host), and one that cleared more than --cleared-after
 * seconds of the job's clock before the job's end (its time from the lateness section's
 * columns: seconds since the job's first timed collective per seq). Each is kept in the
 * output as set aside, with why. */
#include "suspects_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xalloc.h"

/* the time of seq on comm's lateness columns (s since the job's first timed collective),
 * linear between the columns' first seqs, past the last along the last column pair; NAN
 * unknown */
static double seq_time(json_t *doc, const char *comm, long long seq) {
  json_t *a = json_object_get(json_object_get(doc, "lateness"), "comms"), *c;
  size_t i;
  json_array_foreach(a, i, c) {
    const char *id = suspects_jstr(c, "comm");
    if (!id || !comm || strcmp(id, comm)) continue;
    json_t *cs = json_object_get(c, "column_seq"), *ct = json_object_get(c, "column_t_s");
    size_t n = json_array_size(cs);
    if (n < 2 || json_array_size(ct) != n) return NAN;
    size_t k = 0;
    while (k + 2 < n && json_integer_value(json_array_get(cs, k + 1)) <= seq) k++;
    double s0 = (double)json_integer_value(json_array_get(cs, k));
    double s1 = (double)json_integer_value(json_array_get(cs, k + 1));
    double t0 = json_number_value(json_array_get(ct, k)), t1 = json_number_value(json_array_get(ct, k + 1));
    if (!(s1 > s0) || !isfinite(t0) || !isfinite(t1)) return NAN;
    return t0 + ((double)seq - s0) * (t1 - t0) / (s1 - s0);
  }
  return NAN;
}

/* the balance section's verdict of rank, NULL none */
static const char *balance_verdict(json_t *doc, long long rank) {
  json_t *a = json_object_get(json_object_get(doc, "balance"), "ranks"), *r;
  size_t i;
  json_array_foreach(a, i, r) {
    json_t *x = json_object_get(r, "rank");
    if (json_is_integer(x) && json_integer_value(x) == rank) return suspects_jstr(r, "verdict");
  }
  return NULL;
}

static void aside(struct suspects *s, size_t d, long long rank, const char *host, const char *kind, double cleared_s,
                  const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void aside(struct suspects *s, size_t d, long long rank, const char *host, const char *kind, double cleared_s,
                  const char *fmt, ...) {
  XGROW(s->aside, s->naside, s->capaside);
  struct aside *a = &s->aside[s->naside++];
  a->dir = d, a->rank = rank, a->kind = kind, a->cleared_s = cleared_s;
  snprintf(a->host, sizeof a->host, "%s", host ? host : "?");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->detail, sizeof a->detail, fmt, ap);
  va_end(ap);
}

bool suspects_straggler_aside(struct suspects *s, size_t d, json_t *doc, json_t *o, double *cleared_s) {
  long long rank = json_is_integer(json_object_get(o, "rank")) ? json_integer_value(json_object_get(o, "rank")) : -1;
  const char *host = suspects_jstr(o, "host"), *comm = suspects_jstr(o, "comm");
  *cleared_s = NAN;
  const char *v = rank >= 0 ? balance_verdict(doc, rank) : NULL;
  if (v && !strcmp(v, "uneven_data")) {
    aside(s, d, rank, host, "uneven_data", NAN,
          "rank %lld: straggler from uneven data (the balance section: its shard is larger; even the shards), not "
          "the node",
          rank);
    return true;
  }
  if (v && !strcmp(v, "data_loader")) {
    aside(s, d, rank, host, "data_loader", NAN,
          "rank %lld: straggler from its data loader (the balance section: its GPU waits for its host), not the "
          "node",
          rank);
    return true;
  }
  if (!json_is_false(json_object_get(o, "ongoing"))) return false;
  json_t *lf = json_object_get(o, "last_flag_seq"), *ff = json_object_get(o, "first_flag_seq");
  json_t *cl = json_object_get(o, "comm_last_seq");
  if (!json_is_integer(lf) || !json_is_integer(cl)) return false;
  double t = seq_time(doc, comm, json_integer_value(cl)) - seq_time(doc, comm, json_integer_value(lf));
  if (!isfinite(t) || t < 0) return false; /* when it cleared is unknown: evidence as it stands */
  *cleared_s = t;
  if (!(t > s->cleared_after)) return false;
  aside(s, d, rank, host, "cleared", t,
        "rank %lld on comm %s: straggler at seqs %lld-%lld cleared %.3f s before the job's end (more than "
        "--cleared-after %g s): dropped",
        rank, comm ? comm : "?", json_is_integer(ff) ? json_integer_value(ff) : -1LL, json_integer_value(lf), t,
        s->cleared_after);
  return true;
}
