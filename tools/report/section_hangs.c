/* tools/report/section_hangs.c: the report's "hangs" section: ops the shim reported not
 * complete after COLLSCOPE_HANG_TIMEOUT, per communicator (analysis/detect.c), also printed by
 * `collscope top` (cli_text_hangs, cli_json_hangs). */
#include "cli.h"
#include "report.h"

static void text_hangs(const struct report *r, FILE *o) { cli_text_hangs(&r->det, o); }
static json_t *json_hangs(const struct report *r) { return cli_json_hangs(&r->det); }

void cli_text_hangs(const struct cs_det_result *det, FILE *o) {
  fprintf(o, "\n# Hangs: ops the shim reported not complete after COLLSCOPE_HANG_TIMEOUT;\n"
             "# reached = highest seq every rank completed; missing = ranks that have not entered the\n"
             "# next seq; GPU not started = ranks that entered it whose GPU never reached it while a\n"
             "# peer's GPU is inside it (the GPU holds: hung, or stuck in its own work); stuck = the\n"
             "# other ranks that entered it\n");
  char hex[17];
  for (size_t i = 0; i < det->nhangs; i++) {
    const struct cs_det_hang *h = &det->hangs[i];
    fprintf(o, "  comm %s size %d: reached seq %lld, stuck at seq %lld\n", cs_comm_hex(h->comm, hex),
            h->comm_size, (long long)h->reached, (long long)h->seq);
    char b[128];
    fprintf(o, "    missing (not entered):");
    for (size_t k = 0; k < h->nmissing; k++)
      fprintf(o, " %d@%s", h->missing[k], cs_text_safe(h->missing_hosts[k], b, sizeof b));
    fprintf(o, "%s\n    GPU not started (entered, GPU never reached it):", h->nmissing ? "" : " none");
    for (size_t k = 0; k < h->nunstarted; k++)
      fprintf(o, " %d@%s", h->unstarted[k], cs_text_safe(h->unstarted_hosts[k], b, sizeof b));
    fprintf(o, "%s\n    stuck (entered, not complete):", h->nunstarted ? "" : " none");
    for (size_t k = 0; k < h->nstuck; k++) fprintf(o, " %d@%s", h->stuck[k], cs_text_safe(h->stuck_hosts[k], b, sizeof b));
    fprintf(o, "%s\n", h->nstuck ? "" : " none");
  }
  if (!det->nhangs) fprintf(o, "  (none)\n");
}

json_t *cli_json_hangs(const struct cs_det_result *det) {
  json_t *a = json_array();
  char hex[17];
  for (size_t i = 0; i < det->nhangs; i++) {
    const struct cs_det_hang *h = &det->hangs[i];
    json_t *o = json_object(), *mr = json_array(), *mh = json_array(), *sr = json_array(), *sh = json_array(),
           *ur = json_array(), *uh = json_array();
    json_object_set_new(o, "comm", json_string(cs_comm_hex(h->comm, hex)));
    json_object_set_new(o, "comm_size", json_integer(h->comm_size));
    json_object_set_new(o, "reached", json_integer(h->reached));
    json_object_set_new(o, "seq", json_integer(h->seq));
    for (size_t k = 0; k < h->nmissing; k++) {
      json_array_append_new(mr, json_integer(h->missing[k]));
      json_array_append_new(mh, json_string(h->missing_hosts[k]));
    }
    for (size_t k = 0; k < h->nstuck; k++) {
      json_array_append_new(sr, json_integer(h->stuck[k]));
      json_array_append_new(sh, json_string(h->stuck_hosts[k]));
    }
    for (size_t k = 0; k < h->nunstarted; k++) {
      json_array_append_new(ur, json_integer(h->unstarted[k]));
      json_array_append_new(uh, json_string(h->unstarted_hosts[k]));
    }
    json_object_set_new(o, "missing_ranks", mr);
    json_object_set_new(o, "hosts", mh);
    json_object_set_new(o, "stuck_ranks", sr);
    json_object_set_new(o, "stuck_hosts", sh);
    json_object_set_new(o, "unstarted_ranks", ur);
    json_object_set_new(o, "unstarted_hosts", uh);
    json_array_append_new(a, o);
  }
  return a;
}

const struct report_section report_section_hangs = {"hangs", NULL, text_hangs, json_hangs, NULL};
