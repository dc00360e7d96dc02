/* bench/null/null_nccl.c: a "null backend" libnccl.so.2 for overhead benchmarks: the
 * NCCL entry points the benchmark uses, returning at once. Like the real library it
 * exports weak ncclX aliases of strong pncclX symbols. Not a simulator: no data moves. */
#include <nccl.h>
#include <string.h>

struct ncclComm {
  int nranks, rank;
};
static struct ncclComm the_comm;

#define EXPORT __attribute__((visibility("default")))
#define ALIAS(name) extern __typeof(p##name) name __attribute__((weak, alias("p" #name), visibility("default")));

EXPORT ncclResult_t pncclGetVersion(int *v) {
  *v = NCCL_VERSION_CODE;
  return ncclSuccess;
}
ALIAS(ncclGetVersion)
EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 7, sizeof(*id));
  return ncclSuccess;
}
ALIAS(ncclGetUniqueId)
EXPORT ncclResult_t pncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) {
  (void)id;
  the_comm.nranks = n;
  the_comm.rank = r;
  *c = &the_comm;
  return ncclSuccess;
}
ALIAS(ncclCommInitRank)
EXPORT ncclResult_t pncclCommCount(const ncclComm_t c, int *n) {
  *n = c->nranks;
  return ncclSuccess;
}
ALIAS(ncclCommCount)
EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t c, int *r) {
  *r = c->rank;
  return ncclSuccess;
}
ALIAS(ncclCommUserRank)
EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t c, int *d) {
  (void)c;
  *d = 0;
  return ncclSuccess;
}
ALIAS(ncclCommCuDevice)
EXPORT ncclResult_t pncclCommDestroy(ncclComm_t c) {
  (void)c;
  return ncclSuccess;
}
ALIAS(ncclCommDestroy)
EXPORT ncclResult_t pncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o,
                                   ncclComm_t c, cudaStream_t st) {
  (void)s;
  (void)r;
  (void)n;
  (void)t;
  (void)o;
  (void)c;
  (void)st;
  return ncclSuccess;
}
ALIAS(ncclAllReduce)
