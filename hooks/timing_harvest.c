/* hooks/timing_harvest.c: GPU timing on the harvest thread (see timing.h): the event pools'
 * refills and clock anchors (a CUDA event recorded and synchronised on the pool's own stream
 * every 2 s, so event times convert to CLOCK_REALTIME), and the harvest client that
 * completes a record's timing from its events or NCCL's profiler plugin. */
#include "timing_internal.h"

static void anchor_refresh(struct cs_evpool *p) {
  int64_t mono = cs_now_ns(CLOCK_MONOTONIC);
  if (p->anchor_ev && mono - p->anchor_mono < 2000000000LL) return;
  CUcontext ctx = atomic_load(&p->ctx), old;
  if (cs_drv.cuCtxPushCurrent(ctx) != CUDA_SUCCESS) return;
  if (!p->anchor_stream && cs_drv.cuStreamCreate(&p->anchor_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
    p->anchor_stream = NULL;
  CUevent e = NULL;
  if (p->anchor_stream && cs_drv.cuEventCreate(&e, CU_EVENT_DEFAULT) == CUDA_SUCCESS) {
    int64_t t0 = cs_now_ns(CLOCK_REALTIME);
    if (cs_drv.cuEventRecord(e, p->anchor_stream) == CUDA_SUCCESS && cs_drv.cuEventSynchronize(e) == CUDA_SUCCESS) {
      int64_t t1 = cs_now_ns(CLOCK_REALTIME);
      if (p->anchor_ev) cs_drv.cuEventDestroy(p->anchor_ev);
      p->anchor_ev = e;
      p->anchor_ns = t0 + (t1 - t0) / 2;
      p->anchor_mono = mono;
    } else {
      cs_drv.cuEventDestroy(e);
    }
  }
  cs_drv.cuCtxPopCurrent(&old);
}

void cs_event_pools_maintain(void) {
  int n;
  struct cs_evpool *pools = cs_evpools(&n);
  for (int i = 0; i < n; i++) {
    struct cs_evpool *p = &pools[i];
    anchor_refresh(p);
    if (cs_queue_size_approx(&p->q) * 2 < POOL_LOW && atomic_load(&p->created) < POOL_CAP) {
      CUcontext old;
      if (cs_drv.cuCtxPushCurrent(atomic_load(&p->ctx)) == CUDA_SUCCESS) {
        cs_evpool_fill(p, POOL_BATCH);
        cs_drv.cuCtxPopCurrent(&old);
      }
    }
  }
}

bool cs_timing_event_done(uint64_t ev) {
  return ev && cs_drv.loaded && cs_drv.cuEventQuery((CUevent)(uintptr_t)ev) == CUDA_SUCCESS;
}

bool cs_event_to_realtime(uint64_t ctx, uint64_t ev, int64_t *ns) {
  struct cs_evpool *p = cs_evpool_find(ctx);
  if (!p) return false;
  if (!p->anchor_ev) anchor_refresh(p);
  if (!p->anchor_ev) return false;
  float ms = 0;
  if (cs_drv.cuEventElapsedTime(&ms, p->anchor_ev, (CUevent)(uintptr_t)ev) != CUDA_SUCCESS) return false;
  *ns = p->anchor_ns + (int64_t)((double)ms * 1e6);
  return true;
}

/* ---- finishing a record (the harvest thread's client, registered by shim/wiring.c) ---- */

static void release_events(struct cs_record *r) {
  if (!r->owns_events) return;
  if (r->ev_start) cs_event_release(r->ctx, r->ev_start);
  if (r->ev_end) cs_event_release(r->ctx, r->ev_end);
}

/* Returns true when the record's timing is finished (timed or given up). */
static bool complete_timing(struct cs_record *r, bool final) {
  if (r->prof_want && !cs_timing_plugin_current()->collect(r, final)) return false; /* NCCL profiler: kernels running */
  if (r->timing != CS_TIMING_PENDING) {
    /* host/error/captured: but a lone start event may still be in flight */
    if (r->owns_events && r->ev_start && !r->ev_end) {
      CUresult q = cs_drv.cuEventQuery((CUevent)(uintptr_t)r->ev_start);
      if (q == CUDA_ERROR_NOT_READY && !final) return false;
    }
    release_events(r);
    return true;
  }
  CUresult q = cs_drv.cuEventQuery((CUevent)(uintptr_t)r->ev_end);
  if (q == CUDA_ERROR_NOT_READY) {
    if (!final) return false;
    r->timing = CS_TIMING_HOST; /* never completed before exit: keep enqueue time only */
    return true;                /* events stay in flight: do not return them */
  }
  int64_t start;
  float ms = 0;
  if (q == CUDA_SUCCESS && cs_event_to_realtime(r->ctx, r->ev_start, &start) &&
      cs_drv.cuEventElapsedTime(&ms, (CUevent)(uintptr_t)r->ev_start, (CUevent)(uintptr_t)r->ev_end) ==
          CUDA_SUCCESS) {
    r->start_ns = start;
    r->end_ns = start + (int64_t)((double)ms * 1e6);
    r->timing = CS_TIMING_GPU_EVENT;
  } else {
    r->timing = CS_TIMING_HOST;
  }
  release_events(r);
  return true;
}

static bool timing_complete(struct cs_record *r, bool final) {
  if (!complete_timing(r, final)) return false;
  if (r->prof_probe) { /* COLLSCOPE_TIMING=auto probation: compare with the plugin's span */
    cs_timing_plugin_current()->probe_judge(r);
    r->prof_probe = 0;
  }
  return true;
}

static int timing_started(const struct cs_record *r) {
  if (!r->ev_start || !cs_drv.loaded) return -1;
  CUresult q = cs_drv.cuEventQuery((CUevent)(uintptr_t)r->ev_start);
  return q == CUDA_SUCCESS ? 1 : q == CUDA_ERROR_NOT_READY ? 0
                                                           : -1;
}

/* the harvest thread's CUDA calls (event queries, the anchor's sync, pool refills) never
 * touch a capture of the job's */
static void timing_thread_start(void) { cs_driver_thread_relaxed(); }

static void timing_tick(void) {
  if (cs_drv.loaded) cs_event_pools_maintain();
}

const struct cs_harvest_client cs_timing_harvest = {
    .name = "timing",
    .complete = timing_complete,
    .tick = timing_tick,
    .thread_start = timing_thread_start,
    .started = timing_started,
};
