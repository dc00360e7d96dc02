/* tests/sim/simcuda.h: the private interface libcuda.so.1 (simulated GPU) offers to the
 * other simulator libraries (libcudart.so.13, libnccl.so.2). Not used by collscope itself.
 * All functions are exported from libcuda.so.1 with the simcuda_ prefix. */
#ifndef COLLSCOPE_SIMCUDA_H
#define COLLSCOPE_SIMCUDA_H
#include <stddef.h>
#include <stdint.h>

/* The simulator libraries are built with -fvisibility=hidden: only names declared with
 * SIMCUDA_API (and the CUDA headers' own declarations, see SIMCUDA_API_BEGIN) are exported. */
#define SIMCUDA_API __attribute__((visibility("default")))
#define SIMCUDA_API_BEGIN _Pragma("GCC visibility push(default)")
#define SIMCUDA_API_END _Pragma("GCC visibility pop")

SIMCUDA_API_BEGIN
#include <cuda.h>

typedef void (*simcuda_fn)(void *arg);

/* Enqueue fn(arg) on the stream's worker, in stream order, like cuLaunchHostFunc, but fn may
 * block for as long as it likes (a collective waiting on peers). NULL, CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD resolve to the calling thread's current device default streams.
 * If the stream is capturing, the item goes into the capture graph instead (replayed by
 * graph launch; free_arg is then called when the graph is destroyed), else free_arg (may
 * be NULL) is called after fn ran. Returns CUDA_SUCCESS or a CUresult error. */
CUresult simcuda_enqueue(CUstream s, simcuda_fn fn, void *arg, simcuda_fn free_arg);

/* Slow-GPU fault: after the item enqueued most recently on s, the worker executes at most
 * one immediately following event-record item, then sleeps us microseconds. */
void simcuda_stream_stall_after(CUstream s, unsigned us);
/* The same, called by an item's own function on its stream worker: after that item. */
void simcuda_worker_stall_after(unsigned us);
/* A GPU hang, called by an item's own function on its stream worker: after that item the
 * worker executes at most one immediately following event-record item (the end event a
 * profiler records behind a collective), then hangs in the next unit it runs (a kernel that
 * never ends): that unit and everything behind it never run, until the process ends. */
void simcuda_worker_hang_after(void);

const char *simcuda_hostname(void);          /* COLLSCOPE_HOSTNAME or gethostname() */
int simcuda_current_device(void);            /* calling thread's device (cudaSetDevice) */
int simcuda_device_count(void);              /* COLLSCOPE_SIM_GPUS, default 8 */
int simcuda_stream_device(CUstream s);       /* device a stream belongs to */
int simcuda_stream_capturing(CUstream s);    /* 1 while s is being captured */
void simcuda_pci_bus_id(int dev, char *buf, size_t len);   /* "0000:18:00.0" */
/* The GPU's 16 UUID bytes (cuDeviceGetUuid's; NVML's nvmlDeviceGetUUID prints the same bytes as
 * "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"): the simulated host's hash, "SIM", the index. */
void simcuda_gpu_uuid(int dev, unsigned char out[16]);

/* What a pointer is: 0 = unknown/plain host memory, 1 = device allocation,
 * 2 = pinned host allocation, 3 = managed. *device set for kinds 1 and 3. */
int simcuda_ptr_kind(const void *p, int *device);

/* A kernel on device dev took a sticky fault (err, e.g. CUDA_ERROR_ILLEGAL_ADDRESS): from now
 * on every synchronize and query of the device's streams, events and context returns err
 * (the first error set stays), and synchronizations already waiting return it at once. */
void simcuda_device_fault(int dev, CUresult err);
CUresult simcuda_device_error(int dev);      /* the device's sticky fault, CUDA_SUCCESS if none */

/* Health faults' `seq` (tests/sim/nvml): libnccl.so.2 notes the seq of each collective it runs
 * on a process's first communicator of device dev; libnvidia-ml.so.1 reads the highest
 * (-1 before the first). */
void simcuda_note_seq(int dev, long long seq);
long long simcuda_last_seq(int dev);
/* Modeled clock: the seq of the last of those collectives that had ended by modeled time t
 * (-1 before the first): what the device had run when a thread whose clock reads t looks. */
long long simcuda_seq_at(int dev, uint64_t t);

/* ---- the modeled clock (COLLSCOPE_SIM_CLOCK=model, tests/sim/cuda/model.c) ----
 * Times are ns since the job's virtual start; CLOCK_REALTIME reads EPOCH + that time. */
#define SIMCUDA_MODEL_EPOCH_NS 1767225600000000000ull   /* 2026-01-01T00:00:00Z */
int simcuda_model_on(void);                  /* 1 with COLLSCOPE_SIM_CLOCK=model */
/* the caller's time: a stream worker's stream virtual time, else the thread's host time */
uint64_t simcuda_model_now(void);
void simcuda_model_advance(uint64_t ns);     /* the caller's time += ns */
void simcuda_model_advance_to(uint64_t t);   /* the caller's time = max(it, t) */
/* inside an application's host function on a stream: the stream is busy ns (scaled by the
 * GPU model's speed, with jitter); returns 1. Elsewhere 0 (the caller really sleeps). */
int simcuda_model_sleep(uint64_t ns);
/* a host sleep or timed wait called from caller (its return address): 1 when it is the job's
 * on the modeled clock (code outside collscope's and the simulator's libraries, on a host
 * thread not named collscope*: tests/sim/cuda/hostwait.c), so its timeout is modeled time */
int simcuda_model_job_wait(const void *caller);
/* a pure delay of ns from caller: on a stream's host function as simcuda_model_sleep, on a
 * job's host thread (simcuda_model_job_wait) the thread's host time += ns; 1 when modeled
 * (the caller returns at once), else 0 (it really sleeps) */
int simcuda_model_delay(uint64_t ns, const void *caller);
/* multiplicative noise of the op with this key (`jitter:` fault, COLLSCOPE_SIM_SEED): the
 * same key and seed give the same factor in every process; 1.0 without jitter */
double simcuda_model_noise(uint64_t key);
double simcuda_model_speed(void);            /* this host's GPU model speed (1.0 = H100) */
uint64_t simcuda_model_rank_key(void);       /* RANK + 1, or 0 without RANK */
/* a collective item's network transfers on this worker: between begin and end the worker's
 * CLOCK_MONOTONIC is modeled (starts at the host's, advances only through
 * simcuda_model_mono_advance_to: a net plugin completing a send at its modeled delivery) */
void simcuda_model_net_begin(void);
void simcuda_model_net_end(void);
int simcuda_model_mono(uint64_t *ns);        /* 1 and that clock while it is on, else 0 */
void simcuda_model_mono_advance_to(uint64_t t);

/* ---- additions (CUDA half), documentation only: no signature above changed ----
 * simcuda_enqueue errors: CUDA_ERROR_INVALID_VALUE (fn NULL), CUDA_ERROR_INVALID_HANDLE (bad
 *   stream), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (the stream's capture was invalidated),
 *   CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (legacy stream used while a blocking stream of the
 *   device is capturing). On any error nothing is enqueued and free_arg is NOT called: the
 *   caller still owns arg. A captured item's free_arg runs when the graph and every
 *   executable instantiated from it (and their pending launches) are gone.
 * simcuda_stream_stall_after on a capturing stream attaches the stall to the last captured
 *   node, so it replays with the graph.
 * Kernels: besides void collscope_simkernel_<name>(void **params, const unsigned grid[3],
 *   const unsigned block[3]), a program may define
 *   const size_t collscope_simkernel_<name>_argsizes[] = { sizeof(arg0), ..., 0 };
 *   then cuLaunchKernel copies the argument values at launch time (as the real driver does)
 *   and params points at the copies. Without it params is the caller's kernelParams array
 *   itself, which must then stay valid until the kernel ran (e.g. static storage).
 *   Launching with `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE) copies the buffer; without
 *   argsizes the kernel then gets params[0] = that copy. */

SIMCUDA_API_END

#endif
