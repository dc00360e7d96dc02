/* tests/apps/common.h: shared helpers of the test training jobs: launcher environment,
 * options, error checks, unique-id exchange, bf16, checksums. The jobs link the REAL
 * libnccl/libcudart (on the simulator, LD_LIBRARY_PATH swaps the libraries in). */
#ifndef COLLSCOPE_APPS_COMMON_H
#define COLLSCOPE_APPS_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

struct app {
  const char *name;
  int rank, world, local_rank, local_world;
  const char *host;
  int ndev, device;
  /* options */
  int steps;
  size_t size; /* --size BYTES */
  int layers, microbatches, tp, ndevs;
  int verbose;
  int compute_us; /* --compute-us N: modelled GPU compute before each collective (a sleep) */
  int mixed;      /* --ops: 0 allreduce, APP_OPS_MIXED / APP_OPS_PAIRWISE (dp_train) */
  /* --shares W0,W1,... (one per rank): this rank's work relative to an equal split,
   * W * w_rank / sum(w) (1 without --shares); dp_train scales its compute by it */
  double work;
  size_t batch_bytes; /* --batch-bytes N: dp_train's input batch per step, split as --shares */
  /* --layers L0,L1,... (one per pipeline stage): this rank's layer count (pipeline); 0 when
   * --layers is one number (`layers`) or absent */
  int stage_layers;
  int accum;    /* --accum K: collectives every K steps (accum) */
  int pp;       /* --pp N: pipeline stages (train3d) */
  double skew;  /* --skew A: Zipf exponent of the token routing (moe) */
  int comms;    /* --comms N: concurrent communicators on their own streams (multicomm) */
  int prefetch; /* --prefetch 0|1: AllGather of the next layer on a second stream (fsdp) */
};

#define APP_OPS_MIXED 1    /* dp_train --ops mixed: cycles ring collectives and sizes */
#define APP_OPS_PAIRWISE 2 /* dp_train --ops pairwise: AlltoAll + grouped Send/Recv */

#define CUDACHECK(call) \
  do { \
    cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) app_die(__FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
  } while (0)
#define NCCLCHECK(call) \
  do { \
    ncclResult_t r_ = (call); \
    if (r_ != ncclSuccess) app_die(__FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
  } while (0)

extern struct app *app_self; /* for messages from app_die */

void app_die(const char *file, int line, const char *what, const char *why) __attribute__((noreturn));

/* Parse the common options (--steps N --size BYTES[K|M] --layers N|L0,L1,... --microbatches N
 * --tp N --ndev N --compute-us N --ops allreduce|mixed|pairwise --shares W0,W1,... --batch-bytes N --accum K
 * --pp N --skew A --comms N --prefetch 0|1 -v, --help;
 * --ops, --shares and --batch-bytes are dp_train's, a list of --layers the pipeline's), read RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE/
 * COLLSCOPE_HOSTNAME (defaults: one process), pick device LOCAL_RANK % device count.
 * `usage` is printed for --help. Makes stdout line buffered. */
void app_init(struct app *a, const char *name, int argc, char **argv, const char *usage);

/* Exchange n (<= 16) unique ids: rank 0 creates them and serves them over the TCP
 * store (bootstrap.c, key "<name>.id<k>"); every other rank fetches all n. */
void app_share_ids(struct app *a, ncclUniqueId *ids, int n);

/* The world communicator: one unique id shared as above, then ncclCommInitRank of every
 * rank (exits the process on failure, as NCCLCHECK does). */
ncclComm_t app_world_comm(struct app *a);

/* FNV-1a 64 over bytes, chainable. */
uint64_t app_fnv(uint64_t h, const void *p, size_t len);
#define APP_FNV_INIT 0xcbf29ce484222325ull

/* bf16 helpers (exact for the small integers the jobs use). */
uint16_t app_f2bf(float f);
float app_bf2f(uint16_t b);

/* Sleep n us: inside a host function on a stream this is modeled GPU compute on the modeled
 * clock (tests/sim/vclock.c), 1/speed as long on a slower GPU model. */
void app_sleep_us(long us);

/* Report a mismatch (the first few of them) and count it. */
void app_mismatch(struct app *a, const char *what, size_t idx, double got, double want);
extern long app_errors; /* updated atomically: threads may report */

/* Exit: non-zero when any mismatch was found. Prints "result <name> rank=R ... FAIL"
 * lines on failure. */
int app_finish(struct app *a);

#endif
