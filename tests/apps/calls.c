/* tests/apps/calls.c: see calls.h. */
#include "calls.h"
#include <stdlib.h>

#include <stdio.h>
#include <string.h>

#include "common.h"

static const char *const kind_name[] = {"eager", "group", "capture", "replay"};

void calls_init(struct calls_comm *c, const char *name, int color, ncclComm_t comm) {
  memset(c, 0, sizeof *c);
  c->name = name;
  c->color = color;
  NCCLCHECK(ncclCommCount(comm, &c->size));
  NCCLCHECK(ncclCommUserRank(comm, &c->crank));
}

void calls_add(struct calls_comm *c, const char *op, size_t bytes, enum calls_kind kind, int group_ops) {
  for (int i = 0; i < c->n; i++) {
    struct calls_entry *e = &c->e[i];
    if (!strcmp(e->op, op) && e->bytes == bytes && e->kind == kind && e->group_ops == group_ops) {
      e->count++;
      return;
    }
  }
  if (c->n == CALLS_MAX) app_die(__FILE__, __LINE__, "calls_add", "too many kinds of call");
  c->e[c->n++] = (struct calls_entry){op, bytes, kind, group_ops, 1};
}

void calls_capture(struct calls_graph *g, struct calls_comm *c, const char *op, size_t bytes, int group_ops) {
  if (g->n == CALLS_MAX) app_die(__FILE__, __LINE__, "calls_capture", "too many captured calls");
  g->e[g->n].c = c;
  g->e[g->n].op = op;
  g->e[g->n].bytes = bytes;
  g->e[g->n].group_ops = group_ops;
  g->n++;
  calls_add(c, op, bytes, CALLS_CAPTURE, group_ops);
}

void calls_replay(struct calls_graph *g) {
  for (int i = 0; i < g->n; i++) {
    calls_add(g->e[i].c, g->e[i].op, g->e[i].bytes, CALLS_REPLAY, g->e[i].group_ops);
    /* a comm's replay count: launches of graphs that hold its calls, each counted once */
    int first = 1;
    for (int k = 0; k < i; k++)
      if (g->e[k].c == g->e[i].c) first = 0;
    if (first) g->e[i].c->replays++;
  }
}

void calls_print(const char *app, int rank, const struct calls_comm *c) {
  char buf[4096];
  size_t at = 0;
  for (int i = 0; i < c->n && at < sizeof buf; i++) {
    const struct calls_entry *e = &c->e[i];
    int w = snprintf(buf + at, sizeof buf - at, "%s[\"%s\",%zu,\"%s\",%d,%ld]", i ? "," : "", e->op, e->bytes,
                     kind_name[e->kind], e->group_ops, e->count);
    if (w < 0 || (size_t)w >= sizeof buf - at) app_die(__FILE__, __LINE__, "calls_print", "line too long");
    at += (size_t)w;
  }
  buf[at] = 0;
  printf("calls %s rank=%d {\"comm\":\"%s\",\"color\":%d,\"size\":%d,\"crank\":%d,\"replays\":%ld,\"ops\":[%s]}\n", app,
         rank, c->name, c->color, c->size, c->crank, c->replays, buf);
}

int calls_capture_mode(const char *app, const char *v) {
  static const char *const names[] = {"global", "thread_local", "relaxed"};
  for (int m = 0; m < 3; m++)
    if (!strcmp(v, names[m])) return m;
  fprintf(stderr, "%s: --capture-mode: expected global, thread_local or relaxed, got '%s'\n", app, v);
  exit(2);
}
