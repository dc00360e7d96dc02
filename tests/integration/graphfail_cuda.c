/* tests/integration/graphfail_cuda.c: a driver library whose graph entry points fail as
 * $GRAPHFAIL says: "record" (cuEventRecordWithFlags: an external record in a capture fails),
 * "setevent" (cuGraphExecEventRecordNodeSetEvent fails); otherwise, and for every other
 * entry point, the simulator's libcuda.so.1 (a dependency of this library) answers. Loaded
 * by the shim via COLLSCOPE_LIBCUDA (the job itself calls neither) to prove that a failing
 * graph entry point leaves the capture, the launches and the job's results untouched. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static int fails(const char *what) {
  const char *v = getenv("GRAPHFAIL");
  return v && !strcmp(v, what);
}

__attribute__((visibility("default"))) CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags) {
  if (fails("record")) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult (*real)(CUevent, CUstream, unsigned) =
      (CUresult(*)(CUevent, CUstream, unsigned))dlsym(RTLD_NEXT, "cuEventRecordWithFlags");
  return real ? real(e, s, flags) : CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec x, CUgraphNode n,
                                                                                   CUevent e) {
  if (fails("setevent")) return CUDA_ERROR_INVALID_VALUE;
  CUresult (*real)(CUgraphExec, CUgraphNode, CUevent) =
      (CUresult(*)(CUgraphExec, CUgraphNode, CUevent))dlsym(RTLD_NEXT, "cuGraphExecEventRecordNodeSetEvent");
  return real ? real(x, n, e) : CUDA_ERROR_NOT_FOUND;
}

/* a real reference into the simulator's libcuda keeps it a DT_NEEDED dependency
 * (the linker drops unused libraries with --as-needed) */
__attribute__((visibility("default"))) void *graphfail_keep_dependency = (void *)&cuEventRecord;
