/* tests/tools/test_tools_report.c: the `collscope report` / `collscope trace` tests of test_tools
 * (main in test_tools.c), on the fixture of tools_fixture.h. The subcommands (called in-process; stdout/stderr are
 * captured through temporary files).
 *
 * The fixture is a table of op records (fx_ops) written as a dump directory of 4 ranks on
 * 2 hosts. Expected report values are recomputed here from that table, independently of
 * tools/cmd_report.c, plus a few hand-checked constants (AllReduce 1 MiB, p50 100 us, 4 ranks:
 * algbw 10.48576 GB/s, busbw 15.72864 GB/s). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "dump/dumpfile.h"
#include "tools_fixture.h"
void test_report_json(void **state) {
  json_t *root = report_json(*state, NULL, NULL);
  json_t *ops = json_object_get(root, "ops");
  assert_true(json_is_array(ops));

  /* Recompute every (op, bucket) row from the fixture table (all comm_size 4). */
  size_t nrows = 0;
  bool done[64] = {false}; /* NFX <= 64, asserted */
  assert_true(NFX <= 64);
  for (size_t i = 0; i < NFX; i++) {
    if (done[i]) continue;
    unsigned long long lo;
    int k = bucket_lo_of(fx_ops[i].bytes, &lo);
    double d[NFX];
    unsigned long long b[NFX];
    size_t n = 0, nd = 0;
    for (size_t j = i; j < NFX; j++) {
      unsigned long long lo2;
      if (strcmp(fx_ops[j].op, fx_ops[i].op) || bucket_lo_of(fx_ops[j].bytes, &lo2) != k) continue;
      done[j] = true;
      b[n++] = fx_ops[j].bytes;
      if (fx_timed(fx_ops[j].timing)) d[nd++] = fx_ops[j].dur_us;
    }
    nrows++;
    json_t *row = find_row(ops, fx_ops[i].op, lo);
    assert_non_null(row);
    assert_int_equal(jnum(row, "count"), n);
    assert_int_equal(jnum(row, "timed"), nd);
    assert_int_equal(jnum(row, "comm_size"), NRANKS);
    double bd[NFX];
    for (size_t m = 0; m < n; m++) bd[m] = (double)b[m];
    double bytes = nr_pct(bd, n, 50);
    assert_int_equal(jnum(row, "bytes"), (long long)bytes);
    if (!nd) {
      assert_true(json_is_null(json_object_get(row, "time_us")));
      assert_true(json_is_null(json_object_get(row, "busbw_gbs")));
      continue;
    }
    double max = 0;
    for (size_t m = 0; m < nd; m++) max = d[m] > max ? d[m] : max;
    double p99 = nr_pct(d, nd, 99), p50 = nr_pct(d, nd, 50);
    json_t *t = json_object_get(row, "time_us");
    assert_true(fabs(jnum(t, "p50") - p50) < 1e-6);
    assert_true(fabs(jnum(t, "p99") - p99) < 1e-6);
    assert_true(fabs(jnum(t, "max") - max) < 1e-6);
    double algbw = bytes / (p50 * 1e-6) / 1e9;
    assert_true(fabs(jnum(row, "algbw_gbs") - algbw) < 1e-6);
    assert_true(fabs(jnum(row, "busbw_gbs") - algbw * busbw_factor(fx_ops[i].op, NRANKS)) < 1e-6);
  }
  assert_int_equal(json_array_size(ops), nrows);

  /* Hand-checked constants. */
  json_t *ar = find_row(ops, "AllReduce", 1048576);
  assert_non_null(ar);
  assert_int_equal(jnum(ar, "count"), 8);
  assert_int_equal(jnum(ar, "bytes"), 1048576);
  assert_true(fabs(jnum(json_object_get(ar, "time_us"), "p50") - 100.0) < 1e-9);
  assert_true(fabs(jnum(json_object_get(ar, "time_us"), "p99") - 300.0) < 1e-9);
  assert_true(fabs(jnum(ar, "algbw_gbs") - 10.48576) < 1e-9);
  assert_true(fabs(jnum(ar, "busbw_gbs") - 15.72864) < 1e-9);
  json_t *big = find_row(ops, "AllReduce", 2097152);
  assert_non_null(big);
  assert_int_equal(jnum(big, "bytes"), 3000000);
  assert_int_equal(jnum(big, "bucket_hi"), 4194303);
  assert_true(fabs(jnum(json_object_get(big, "time_us"), "p50") - 210.0) < 1e-9);
  json_t *ag = find_row(ops, "AllGather", 524288);
  assert_true(fabs(jnum(ag, "busbw_gbs") - 524288.0 / 52e3 * 0.75) < 1e-9);
  /* Row order: schema.h op order (AllReduce first), then size. */
  assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 0), "op")), "AllReduce");
  assert_int_equal(jnum(json_array_get(ops, 0), "bucket_lo"), 512);

  /* ranks */
  json_t *ranks = json_object_get(root, "ranks");
  assert_int_equal(json_array_size(ranks), NRANKS);
  for (int r = 0; r < NRANKS; r++) {
    json_t *o = json_array_get(ranks, (size_t)r);
    assert_int_equal(jnum(o, "rank"), r);
    assert_string_equal(json_string_value(json_object_get(o, "host")), host_of(r));
    int xf = r == 0 || r == 2;
    assert_int_equal(jnum(o, "records"), NSEQ + xf);
    assert_int_equal(jnum(o, "ops"), NSEQ);
    double ms = 0;
    unsigned long long bytes = 0;
    for (size_t i = 0; i < NFX; i++)
      if (fx_ops[i].rank == r) {
        bytes += fx_ops[i].bytes;
        if (fx_timed(fx_ops[i].timing)) ms += fx_ops[i].dur_us / 1000.0;
      }
    assert_true(fabs(jnum(o, "gpu_time_ms") - ms) < 1e-9);
    assert_int_equal(jnum(o, "bytes"), bytes);
    assert_int_equal(jnum(o, "drops"), r == 1 ? 3 : 0);
    assert_int_equal(json_is_true(json_object_get(o, "clean_exit")), r != 3);
  }
  assert_true(fabs(jnum(json_array_get(ranks, 0), "gpu_time_ms") - 0.46) < 1e-9);

  /* comms */
  json_t *comms = json_object_get(root, "comms");
  assert_int_equal(json_array_size(comms), 1);
  json_t *c = json_array_get(comms, 0);
  assert_string_equal(json_string_value(json_object_get(c, "comm")), COMM);
  assert_int_equal(jnum(c, "size"), NRANKS);
  assert_int_equal(jnum(c, "ranks"), NRANKS);
  assert_int_equal(jnum(c, "ops"), NFX);
  assert_int_equal(jnum(c, "instances"), NSEQ);

  /* summary / notes */
  json_t *s = json_object_get(root, "summary");
  assert_int_equal(jnum(s, "files"), 4);
  assert_int_equal(jnum(s, "ranks"), 4);
  assert_int_equal(jnum(s, "hosts"), 2);
  assert_int_equal(jnum(s, "ops"), NFX);
  assert_int_equal(jnum(s, "xfers"), 2);
  assert_int_equal(jnum(s, "captured"), 4);
  assert_int_equal(jnum(s, "host_timed"), 3);
  { /* timed ops by source: the fixture's timing strings */
    size_t ev = 0, pr = 0, hs = 0;
    for (size_t i = 0; i < NFX; i++) {
      ev += !strcmp(fx_ops[i].timing, "gpu_event");
      pr += !strcmp(fx_ops[i].timing, "profiler");
      hs += !strcmp(fx_ops[i].timing, "host_span");
    }
    assert_true(ev > 0 && pr == 1);
    assert_int_equal(jnum(s, "timed_gpu_event"), ev);
    assert_int_equal(jnum(s, "timed_profiler"), pr);
    assert_int_equal(jnum(s, "timed_host_span"), hs);
    assert_int_equal(jnum(s, "timed"), ev + pr + hs);
  }
  assert_int_equal(jnum(s, "errors"), 1);
  assert_int_equal(jnum(s, "drops"), 3);
  assert_int_equal(jnum(s, "truncated_lines"), 0);
  assert_int_equal(jnum(s, "files_without_footer"), 1);
  json_t *pr = json_object_get(s, "profiler_ranks");
  assert_int_equal(jnum(pr, "trusted"), 1);
  assert_int_equal(jnum(pr, "rejected"), 1);
  assert_int_equal(jnum(pr, "mixed") + jnum(pr, "probation") + jnum(pr, "not_loaded") + jnum(pr, "forced"), 0);
  assert_int_equal(jnum(pr, "other"), 1);
  assert_int_equal(jnum(s, "timing_lost"), 2);
  json_t *sec = json_object_get(root, "sections");
  assert_true(json_is_array(sec));
  assert_string_equal(json_string_value(json_array_get(sec, 0)), "summary");
  json_decref(root);
}

void test_report_op_filter(void **state) {
  json_t *root = report_json(*state, "--op", "allgather");
  json_t *ops = json_object_get(root, "ops");
  assert_int_equal(json_array_size(ops), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 0), "op")), "AllGather");
  assert_int_equal(jnum(json_object_get(root, "summary"), "ops"), 4);
  assert_int_equal(jnum(json_array_get(json_object_get(root, "ranks"), 0), "records"), 1);
  json_decref(root);
}

void test_report_text(void **state) {
  char *argv[] = {"report", *state, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_report, argv, &out, &err), 0);
  assert_string_equal(err, "");
  char *sq = squeeze(out);
  /* op nranks size bucket_lo count timed(* under 10) p50 p99 max mean algbw busbw busbw(mean) */
  const char *rows[] = {
      "AllReduce 4 1048576 1048576 8 8* 100.00 300.00 300.00 125.62 10.49 15.73 12.52",
      "AllReduce 4 3000000 2097152 4 4* 210.00 230.00 230.00 215.00 14.29 21.43 20.93",
      "AllReduce 4 4096 4096 4 0 - - - - - - -",
      "AllReduce 4 1000 512 4 0 - - - - - - -",
      "AllGather 4 524288 524288 4 4* 52.00 60.00 60.00 54.25 10.08 7.56 7.25",
      "Send 4 65536 65536 2 2* 20.00 22.00 22.00 21.00 3.28 3.28 3.12",
      "Recv 4 65536 65536 2 2* 21.00 23.00 23.00 22.00 3.12 3.12 2.98",
      "* 5 rows timed on fewer than 10 records (count `timed`): their figures are not a measurement to compare",
      /* rank host pid records ops xfers gpu_time(ms) bytes drops lost exit */
      "0 nodeA 1000 8 7 1 0.460 5692072 0 0 clean",
      "3 nodeB 1003 7 7 0 0.700 5692072 0 0 no-footer",
      "1 nodeA 1001 7 7 0 0.511 5692072 3 0 clean",
      /* comm size ranks ops instances bytes gpu_time(ms) */
      COMM " 4 4 28 7 22768288 2.168",
      "# captured ops (graph capture, no timing): 4",
      "# error ops (call failed): 1",
      "# dropped records: 3",
      "# truncated lines skipped: 0",
      "# files without footer (unclean exit): 1",
      "# ops whose GPU timing was lost (footer): 2",
      ("# NCCL profiler plugin, ranks: trusted 1, rejected 1, other 1 (rejecting ranks: 3 of 64 probes agreed with CUDA events; "
       "rejected: AllReduce)"),
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (!strstr(sq, rows[i])) fprintf(stderr, "missing row: %s\nin:\n%s\n", rows[i], out);
    assert_non_null(strstr(sq, rows[i]));
  }
  free(sq);
  free(out);
  free(err);
}

/* ---------- trace ---------- */

void test_trace(void **state) {
  char tp[600];
  snprintf(tp, sizeof tp, "%s/trace.json", (char *)*state);
  char *argv[] = {"trace", *state, "-o", tp, NULL};
  char *out, *err;
  assert_int_equal(run_capture(cmd_trace, argv, &out, &err), 0);
  assert_string_equal(out, "");
  free(out);
  free(err);

  json_error_t je;
  json_t *root = json_load_file(tp, 0, &je);
  if (!root) fprintf(stderr, "trace is not JSON: %s line %d\n", je.text, je.line);
  assert_non_null(root);
  assert_string_equal(jstr(root, "displayTimeUnit"), "ns");
  json_t *evs = json_object_get(root, "traceEvents");
  assert_true(json_is_array(evs));
  size_t nevents = json_array_size(evs);

  size_t want_x = 0, want_i = 0, want_flows = 0;
  for (size_t i = 0; i < NFX; i++) {
    if (fx_timed(fx_ops[i].timing))
      want_x++;
    else
      want_i++;
  }
  want_x += 1;          /* rank 0 timed HtoD */
  want_i += 1 + NRANKS; /* rank 2 host DtoH, comm init per rank */
  for (int s = 0; s < NSEQ; s++) {
    size_t t = 0;
    for (size_t i = 0; i < NFX; i++) t += fx_ops[i].seq == s && fx_timed(fx_ops[i].timing);
    if (t >= 2) want_flows += t - 1;
  }
  assert_int_equal(want_flows, 15);

  size_t nx = 0, ni = 0, ns = 0, nf = 0, pname = 0, tname = 0, psort = 0;
  size_t i;
  json_t *e;
  json_array_foreach(evs, i, e) {
    const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
    assert_true(json_is_integer(json_object_get(e, "pid")));
    assert_true(json_is_integer(json_object_get(e, "tid")));
    if (!strcmp(ph, "X")) {
      nx++;
      json_t *a = json_object_get(e, "args");
      assert_true(json_is_object(a));
      if (!strcmp(name, "AllReduce") && json_integer_value(json_object_get(a, "seq")) == 1 &&
          json_integer_value(json_object_get(a, "rank")) == 3) {
        assert_int_equal(json_integer_value(json_object_get(e, "pid")), 3);
        assert_true(fabs(jnum(e, "ts") - (double)start_of(3, 1) / 1000.0) < 1.0);
        assert_true(fabs(jnum(e, "dur") - 300.0) < 1e-9);
        assert_string_equal(jstr(a, "comm"), COMM);
        assert_string_equal(jstr(a, "timing"), "gpu_event");
        assert_int_equal(json_integer_value(json_object_get(a, "bytes")), 1048576);
        assert_string_equal(jstr(e, "cat"), "coll");
      }
    } else if (!strcmp(ph, "i")) {
      ni++;
    } else if (!strcmp(ph, "s")) {
      ns++;
      assert_string_equal(jstr(e, "cat"), "coll");
    } else if (!strcmp(ph, "f")) {
      nf++;
      assert_string_equal(jstr(e, "cat"), "coll");
      assert_string_equal(jstr(e, "bp"), "e");
    } else if (!strcmp(ph, "M")) {
      json_t *a = json_object_get(e, "args");
      if (!strcmp(name, "process_name")) {
        pname++;
        int pid = (int)json_integer_value(json_object_get(e, "pid"));
        char want[64];
        snprintf(want, sizeof want, "rank %d (%s)", pid, host_of(pid));
        assert_string_equal(jstr(a, "name"), want);
      } else if (!strcmp(name, "thread_name")) {
        tname++;
        const char *tn = jstr(a, "name");
        assert_true(!strncmp(tn, "stream 0x", 9) || !strcmp(tn, "host"));
      } else if (!strcmp(name, "process_sort_index")) {
        psort++;
      }
    } else {
      fail_msg("unexpected ph %s", ph);
    }
  }
  assert_int_equal(nx, want_x);
  assert_int_equal(ni, want_i);
  assert_int_equal(ns, want_flows);
  assert_int_equal(nf, want_flows);
  assert_int_equal(pname, NRANKS);
  assert_int_equal(psort, NRANKS);
  /* streams: ranks 0-3 main stream + p2p stream, plus a "host" track each */
  assert_int_equal(tname, NRANKS * 2 + NRANKS);

  /* Every flow endpoint lies inside an X slice on its own pid/tid, and ids pair up. */
  json_array_foreach(evs, i, e) {
    const char *ph = jstr(e, "ph");
    if (strcmp(ph, "s") && strcmp(ph, "f")) continue;
    json_int_t pid = json_integer_value(json_object_get(e, "pid"));
    json_int_t tid = json_integer_value(json_object_get(e, "tid"));
    double ts = jnum(e, "ts");
    bool inside = false, paired = false;
    size_t k;
    json_t *x;
    json_array_foreach(evs, k, x) {
      const char *xph = jstr(x, "ph");
      if (!strcmp(xph, "X") && json_integer_value(json_object_get(x, "pid")) == pid &&
          json_integer_value(json_object_get(x, "tid")) == tid && jnum(x, "ts") <= ts &&
          ts <= jnum(x, "ts") + jnum(x, "dur"))
        inside = true;
      if (k != i && strcmp(xph, ph) && (!strcmp(xph, "s") || !strcmp(xph, "f")) &&
          json_integer_value(json_object_get(x, "id")) == json_integer_value(json_object_get(e, "id")))
        paired = true;
    }
    assert_true(inside);
    assert_true(paired);
  }
  json_decref(root);

  /* Standard output form parses too. */
  char *argv2[] = {"trace", *state, NULL};
  assert_int_equal(run_capture(cmd_trace, argv2, &out, &err), 0);
  json_t *r2 = json_loads(out, 0, &je);
  assert_non_null(r2);
  assert_int_equal(json_array_size(json_object_get(r2, "traceEvents")), nevents);
  json_decref(r2);
  free(out);
  free(err);
}
