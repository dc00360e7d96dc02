/* tests/apps/calls.h: the framework replicas' own count of the NCCL calls they issue, per
 * communicator, printed as one `calls` line per rank and communicator, which
 * test_frameworks.py compares with collscope's dumps.
 *
 * Line: calls APP rank=R {"comm":NAME,"color":C,"size":N,"crank":K,"replays":P,
 *        "ops":[[OP,BYTES,KIND,GROUP_OPS,COUNT],...]}
 * KIND: "eager" (outside a group), "group" (inside ncclGroupStart/End; GROUP_OPS ops of that
 * group share its stream), "capture" (issued while its stream was captured into a CUDA graph),
 * "replay" (one per launch of that graph). BYTES follow collscope's rule (schema.h
 * COLLSCOPE_OPS): count x type size, times the communicator's size for AllGather and
 * ReduceScatter. Members of one communicator print the same NAME and COLOR. */
#ifndef COLLSCOPE_APPS_CALLS_H
#define COLLSCOPE_APPS_CALLS_H
#include <stddef.h>

#include <nccl.h>

#define CALLS_MAX 48

/* --capture-mode's value as CUDA's capture mode (the runtime's and the driver's enums agree:
 * global 0, thread_local 1, relaxed 2); anything else: a usage line from APP, exit 2 */
int calls_capture_mode(const char *app, const char *v);

enum calls_kind { CALLS_EAGER,
                  CALLS_GROUP,
                  CALLS_CAPTURE,
                  CALLS_REPLAY };

struct calls_entry {
  const char *op;
  size_t bytes;
  enum calls_kind kind;
  int group_ops;
  long count;
};

struct calls_comm {
  const char *name;
  int color, size, crank;
  long replays;
  int n;
  struct calls_entry e[CALLS_MAX];
};

/* Name the communicator (size and rank asked of NCCL). */
void calls_init(struct calls_comm *c, const char *name, int color, ncclComm_t comm);

/* Count one call; group_ops: the ops of its group on its stream (1 outside a group). */
void calls_add(struct calls_comm *c, const char *op, size_t bytes, enum calls_kind kind, int group_ops);

/* A captured CUDA graph: what it holds, so each launch adds one "replay" per captured call. */
struct calls_graph {
  int n;
  struct {
    struct calls_comm *c;
    const char *op;
    size_t bytes;
    int group_ops;
  } e[CALLS_MAX];
};

/* Count a call issued while capturing graph g (kind "capture"), remembered for its replays. */
void calls_capture(struct calls_graph *g, struct calls_comm *c, const char *op, size_t bytes, int group_ops);

/* Count one launch of graph g. */
void calls_replay(struct calls_graph *g);

void calls_print(const char *app, int rank, const struct calls_comm *c);

#endif
