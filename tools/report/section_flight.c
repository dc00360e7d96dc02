/* tools/report/section_flight.c: the report's "flight" section (COLLSCOPE_RECORD=summary,
 * docs/always-on.md): the flight-recorder windows the ranks wrote (why, which op, how many op
 * lines of detail), how many ops the ops table read from summary lines, and how many
 * (communicator, rank) gaps lines the balance section read. Nothing is printed for a
 * recording in full mode. */
#include <stdio.h>

#include "report.h"
#include "report_agg.h"

#define FLIGHT_LISTED 32 /* windows listed in the text (all in the JSON) */

static size_t gaps_lines(const struct report *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->set->nfiles; i++) n += r->set->files[i].ngaps;
  return n;
}

static void text_flight(const struct report *r, FILE *o) {
  const struct report_agg *a = r->agg;
  if (!a || (!a->summary_lines && !a->windows)) return;
  fprintf(o, "\n# Flight recorder (COLLSCOPE_RECORD=summary): %zu window%s, %zu op lines of detail; the ops table\n"
             "# read %zu ops from %zu summary lines (and %zu CUDA memcpys)\n",
          a->windows, a->windows == 1 ? "" : "s", a->window_ops, a->summary_ops, a->summary_lines, a->summary_xfers);
  size_t g = gaps_lines(r);
  if (g) fprintf(o, "# the balance section read its compute per rank from %zu gaps lines\n", g);
  if (a->gaps_refused || a->gaps_sched_refused)
    fprintf(o, "# gaps lines refused: %zu (malformed, or more ops than their file's summaries count: those ranks\n"
               "# are not in the balance section); schedule figures refused: %zu (malformed peers, or last ops'\n"
               "# seqs or compute)\n",
            a->gaps_refused, a->gaps_sched_refused);
  if (!a->windows)
    fprintf(o, "# no window: the stragglers, hangs and SDC sections saw no op line (a window opens on a failed op,\n"
               "# a hang, a signal, a request, or a finding of the online exchange, which runs on the world\n"
               "# communicator's collectives: a job whose world communicator carries none gets no finding)\n");
  size_t shown = 0;
  char b[128], c[17];
  for (size_t i = 0; i < r->set->nfiles; i++) {
    const struct cs_dumpfile *f = &r->set->files[i];
    for (size_t j = 0; j < f->nwindows; j++) {
      const struct cs_window_rec *w = &f->windows[j];
      if (shown++ == FLIGHT_LISTED) fprintf(o, "  ... (all of them in --json)\n");
      if (shown > FLIGHT_LISTED) continue;
      fprintf(o, "  rank %4d  %-8s", w->rank, cs_text_safe(w->reason, b, sizeof b));
      if (w->has_comm) fprintf(o, " comm %s seq %lld", cs_comm_hex(w->comm, c), (long long)w->seq);
      fprintf(o, "  %llu records before, up to %llu after  (%s line %u)\n", (unsigned long long)w->before,
              (unsigned long long)w->after, cs_text_safe(f->name, b, sizeof b), w->line);
    }
  }
}

static json_t *json_flight(const struct report *r) {
  const struct report_agg *a = r->agg;
  json_t *o = json_object();
  json_object_set_new(o, "summary_ops", jcount(a ? a->summary_ops : 0));
  json_object_set_new(o, "summary_lines", jcount(a ? a->summary_lines : 0));
  json_object_set_new(o, "summary_xfers", jcount(a ? a->summary_xfers : 0));
  json_object_set_new(o, "window_ops", jcount(a ? a->window_ops : 0));
  json_object_set_new(o, "gaps_lines", jcount(gaps_lines(r)));
  json_object_set_new(o, "gaps_refused", jcount(a ? a->gaps_refused : 0));
  json_object_set_new(o, "gaps_sched_refused", jcount(a ? a->gaps_sched_refused : 0));
  json_t *ws = json_array();
  for (size_t i = 0; i < r->set->nfiles; i++) {
    const struct cs_dumpfile *f = &r->set->files[i];
    for (size_t j = 0; j < f->nwindows; j++) {
      const struct cs_window_rec *w = &f->windows[j];
      json_t *x = json_object();
      char c[17];
      json_object_set_new(x, "rank", json_integer(w->rank));
      json_object_set_new(x, "reason", json_string(w->reason));
      json_object_set_new(x, "comm", w->has_comm ? json_string(cs_comm_hex(w->comm, c)) : json_null());
      json_object_set_new(x, "seq", json_integer(w->seq));
      json_object_set_new(x, "ring_ops", jbytes(w->before));
      json_object_set_new(x, "after_ops", jbytes(w->after));
      json_object_set_new(x, "file", json_string(f->name));
      json_array_append_new(ws, x);
    }
  }
  json_object_set_new(o, "windows", ws);
  return o;
}

const struct report_section report_section_flight = {"flight", NULL, text_flight, json_flight, NULL};
