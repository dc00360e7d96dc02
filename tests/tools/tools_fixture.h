/* tests/tools/tools_fixture.h: the dump-directory fixture and helpers shared by the tools
 * tests (tools_fixture.c): a table of op records written as 4 ranks on 2 hosts, in-process
 * command capture, and the nearest-rank / busbw arithmetic the expected values use. */
#ifndef COLLSCOPE_TESTS_TOOLS_FIXTURE_H
#define COLLSCOPE_TESTS_TOOLS_FIXTURE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define NRANKS 4
#define COMM "a1b2c3d4e5f60718"
#define T0 1700000000000000000LL

struct fx_op {
  int rank, seq;
  const char *op, *dtype;
  long long count;
  unsigned long long bytes;
  double dur_us;
  const char *timing;
  int peer, status;
  int p2p_stream; /* 1: on the rank's second stream */
};
#define NSEQ 7
extern const struct fx_op fx_ops[];
extern const size_t fx_nops;
#define NFX fx_nops

bool fx_timed(const char *timing);
const char *host_of(int r);
int pid_of(int r);
unsigned long long stream_of(int r, int p2p);
long long start_of(int r, int seq);
void fx_path(char *buf, size_t n, const char *dir, int r);
void write_op_line(FILE *f, const struct fx_op *o);
void write_fixture(const char *dir, int schema);
char *make_tmpdir(void);
void rm_tree(char *dir);
char *slurp(FILE *f);
int run_capture(int (*fn)(int, char **), char **argv, char **out, char **err);
char *squeeze(const char *s);
json_t *report_json(const char *dir, const char *extra1, const char *extra2);
int bucket_lo_of(unsigned long long b, unsigned long long *lo);
int cmp_d(const void *a, const void *b);
double nr_pct(double *v, size_t n, double p);
double busbw_factor(const char *op, int n);
json_t *find_row(json_t *ops, const char *op, unsigned long long bucket_lo);
double jnum(json_t *o, const char *k);
int setup_dir(void **state);
int teardown_dir(void **state);
const char *jstr(json_t *o, const char *k);

#endif
