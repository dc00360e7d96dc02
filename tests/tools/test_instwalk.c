/* tests/tools/test_instwalk.c: the per-communicator k-way merge (tools/dump/instwalk.c) against
 * grouping everything at once: files pushed a random piece at a time, communicators that
 * not every file is in, a file that stops early, duplicates and a record out of order; a
 * communicator that reaches each file in a different round, a comm_size never filled, and
 * records a few seqs out of order within a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dump/instwalk.h"

enum { NF = 6,
       NSEQ = 400 };
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* expected members per (comm index, seq): a bit per file */
static unsigned want[2][NSEQ];
static unsigned got[2][NSEQ];
static int64_t last_seq[2] = {-1, -1};
static size_t emitted, max_held, dup_members;
static struct cs_walk *walk;

static void on_instance(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  (void)ctx;
  int c = comm == 0xb;
  assert_true(seq > last_seq[c]); /* in seq order per communicator */
  last_seq[c] = seq;
  assert_true(seq < NSEQ);
  for (size_t i = 0; i < n; i++) {
    assert_true(m[i].comm == comm && m[i].seq == seq);
    if (i) assert_true(m[i - 1].comm_rank < m[i].comm_rank ||
                       (m[i - 1].comm_rank == m[i].comm_rank && m[i - 1].file <= m[i].file));
    got[c][seq] |= 1u << m[i].file;
    dup_members += c == 0 && seq == 10 && m[i].file == 1;
  }
  emitted++;
  if (cs_walk_held(walk) > max_held) max_held = cs_walk_held(walk);
}

static void merge_equals_grouping(void **state) {
  (void)state;
  /* file f: comm a (all files) every seq; comm b (files 0..2) every seq; file 5 stops at 250 */
  struct cs_walk_rec *recs[NF];
  size_t nrec[NF] = {0}, pos[NF] = {0};
  for (int f = 0; f < NF; f++) {
    recs[f] = calloc(2 * NSEQ + 4, sizeof *recs[f]);
    for (int s = 0; s < NSEQ; s++) {
      if (f == 5 && s >= 250) break;
      for (int c = 0; c < 2; c++) {
        if (c == 1 && f > 2) continue;
        struct cs_walk_rec *r = &recs[f][nrec[f]++];
        r->comm = c ? 0xb : 0xa;
        r->seq = s;
        r->comm_rank = c ? f : NF - 1 - f;
        r->file = (uint32_t)f;
        want[c][s] |= 1u << f;
        if (f == 1 && c == 0 && s == 10) recs[f][nrec[f]++] = *r; /* a duplicate: both are members */
      }
    }
  }
  /* file 2 repeats an old seq at the end: late */
  recs[2][nrec[2]++] = (struct cs_walk_rec){.comm = 0xa, .seq = 3, .comm_rank = NF - 3, .file = 2};
  walk = cs_walk_new(NF, on_instance, NULL);
  assert_non_null(walk);
  for (int f = 0; f < NF; f++) { /* the files' comm records */
    assert_true(cs_walk_join(walk, (uint32_t)f, 0xa));
    if (f <= 2) assert_true(cs_walk_join(walk, (uint32_t)f, 0xb));
  }
  for (bool left = true; left;) { /* rounds: every file pushes a random piece */
    left = false;
    for (int f = 0; f < NF; f++) {
      size_t k = next() % 30;
      while (k-- && pos[f] < nrec[f]) assert_true(cs_walk_push(walk, &recs[f][pos[f]++]));
      if (pos[f] == nrec[f])
        cs_walk_file_done(walk, (uint32_t)f);
      else
        left = true;
    }
    assert_true(cs_walk_advance(walk));
  }
  assert_true(cs_walk_advance(walk));
  for (int c = 0; c < 2; c++)
    for (int s = 0; s < NSEQ; s++) assert_int_equal(got[c][s], want[c][s]);
  assert_int_equal(emitted, 2 * NSEQ);
  assert_int_equal(dup_members, 2);
  assert_int_equal(cs_walk_late(walk), 1); /* file 2's repeated seq 3 */
  assert_int_equal(cs_walk_held(walk), 0);
  assert_true(max_held < 6 * 2 * 30 * 3); /* bounded by files x piece, not by records */
  cs_walk_free(walk);
  for (int f = 0; f < NF; f++) free(recs[f]);
}

/* a communicator created mid-job: its first records reach the walker from each file in a
 * different round; with comm_size 3 its instances wait for all three files (without the
 * wait, file 0's instances went out alone and files 1 and 2 counted as late) */
static size_t lj_members[20], lj_instances;
static void on_late_joiner(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  (void)ctx;
  (void)m;
  if (comm != 0xc) return;
  assert_true(seq >= 0 && seq < 20);
  lj_members[seq] = n;
  lj_instances++;
}
static void late_joiner(void **state) {
  (void)state;
  struct cs_walk *w = cs_walk_new(3, on_late_joiner, NULL);
  assert_non_null(w);
  for (int round = 0; round < 3; round++) {
    for (int f = 0; f < 3; f++) {
      /* every file has records of another comm each round; file f reaches comm 0xc in round f */
      struct cs_walk_rec o = {.comm = 0xd, .seq = round, .comm_rank = f, .comm_size = 3, .file = (uint32_t)f};
      assert_true(cs_walk_push(w, &o));
      if (f == round)
        for (int s = 0; s < 20; s++) {
          struct cs_walk_rec r = {.comm = 0xc, .seq = s, .comm_rank = f, .comm_size = 3, .file = (uint32_t)f};
          assert_true(cs_walk_push(w, &r));
        }
    }
    assert_true(cs_walk_advance(w));
  }
  for (int f = 0; f < 3; f++) cs_walk_file_done(w, (uint32_t)f);
  assert_true(cs_walk_advance(w));
  assert_int_equal(lj_instances, 20);
  for (int s = 0; s < 20; s++) assert_int_equal(lj_members[s], 3);
  assert_int_equal(cs_walk_late(w), 0);
  assert_int_equal(cs_walk_held(w), 0);
  cs_walk_free(w);
}

/* a comm_size that claims more ranks than ever write to the comm: its instances still go
 * out (at the end here), each with the one member there is, nothing late */
static void claimed_size_never_filled(void **state) {
  (void)state;
  memset(lj_members, 0, sizeof lj_members);
  lj_instances = 0;
  struct cs_walk *w = cs_walk_new(3, on_late_joiner, NULL);
  assert_non_null(w);
  for (int s = 0; s < 20; s++) {
    struct cs_walk_rec r = {.comm = 0xc, .seq = s, .comm_rank = 0, .comm_size = 1000, .file = 0};
    assert_true(cs_walk_push(w, &r));
  }
  assert_true(cs_walk_advance(w));
  for (int f = 0; f < 3; f++) cs_walk_file_done(w, (uint32_t)f);
  assert_true(cs_walk_advance(w));
  assert_int_equal(lj_instances, 20);
  for (int s = 0; s < 20; s++) assert_int_equal(lj_members[s], 1);
  assert_int_equal(cs_walk_late(w), 0);
  cs_walk_free(w);
}

/* a file whose timed records come after later sampled-out ones (the shim writes a record when
 * its work is done): 4 files, every 16th seq of a file written 1-3 records late, pushed a
 * random piece at a time; every instance has all 4 members, in seq order, nothing late (before
 * the queues were kept in seq order the merge gave such an instance out without that file's
 * record and dropped it as late, so which records made an instance followed the file order) */
static size_t ro_members[256], ro_instances;
static int64_t ro_last = -1;
static void on_reordered(void *ctx, uint64_t comm, int64_t seq, const struct cs_walk_rec *m, size_t n) {
  (void)ctx;
  (void)m;
  assert_true(comm == 0xe && seq > ro_last && seq < 256);
  ro_last = seq;
  ro_members[seq] = n;
  ro_instances++;
}
static void reordered_within_files(void **state) {
  (void)state;
  enum { NFR = 4,
         NS = 256 };
  struct cs_walk_rec recs[NFR][NS];
  for (int f = 0; f < NFR; f++) {
    for (int s = 0; s < NS; s++)
      recs[f][s] = (struct cs_walk_rec){.comm = 0xe, .seq = s, .comm_rank = f, .comm_size = NFR, .file = (uint32_t)f};
    for (int s = 0; s + 4 < NS; s += 16) { /* seq s moves behind the next 1-3 records */
      int k = 1 + (int)(next() % 3);
      struct cs_walk_rec t = recs[f][s];
      memmove(&recs[f][s], &recs[f][s + 1], (size_t)k * sizeof t);
      recs[f][s + k] = t;
    }
  }
  struct cs_walk *w = cs_walk_new(NFR, on_reordered, NULL);
  assert_non_null(w);
  size_t pos[NFR] = {0};
  for (bool left = true; left;) {
    left = false;
    for (int f = 0; f < NFR; f++) {
      size_t k = next() % 7;
      while (k-- && pos[f] < NS) assert_true(cs_walk_push(w, &recs[f][pos[f]++]));
      if (pos[f] == NS)
        cs_walk_file_done(w, (uint32_t)f);
      else
        left = true;
    }
    assert_true(cs_walk_advance(w));
  }
  assert_int_equal(cs_walk_late(w), 0);
  assert_int_equal(ro_instances, NS);
  for (int s = 0; s < NS; s++) assert_int_equal(ro_members[s], NFR);
  assert_int_equal(cs_walk_held(w), 0);
  cs_walk_free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(merge_equals_grouping), cmocka_unit_test(late_joiner),
                                     cmocka_unit_test(claimed_size_never_filled), cmocka_unit_test(reordered_within_files)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
