/* tools/suspects_internal.h: what `collscope suspects`' two files share: the hosts and GPUs
 * the reports implicate with their evidence, gathered from each DIR's report document by
 * tools/suspects_gather.c, and printed with the scheduler actions by tools/cmd_suspects.c. */
#ifndef COLLSCOPE_TOOLS_SUSPECTS_INTERNAL_H
#define COLLSCOPE_TOOLS_SUSPECTS_INTERNAL_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uthash.h>

#include "suspects_nodes.h"

enum level { LVL_NONE = 0,
             LVL_WATCH = 1,
             LVL_DRAIN = 2 };
static inline const char *level_name(int l) { return l == LVL_DRAIN ? "drain" : l == LVL_WATCH ? "watch"
                                                                                               : "ok"; }

struct evidence {
  const char *kind; /* straggler, sdc, slow_link, hang_missing, hang_gpu, hang_stuck, nccl_errors, health (static) */
  int level;
  size_t dir;     /* index into the DIR arguments */
  long long rank; /* -1: none */
  char detail[256];
};

struct gpu {
  long long rank, device;
  char pci[40];
  char uuid[96]; /* NVML's, from the report's health section; "" unknown */
  size_t dir;
};

/* A host is keyed by what an action would name: a verified node ("v:" node), or an
 * unverified host name from the dumps ("u:" name), which no action ever names. */
struct host {
  char *key;
  const char *name; /* the node, or the dump's host name (points into key) */
  bool verified;
  char why[200];   /* unverified: what is missing (the first reason found) */
  char label[128]; /* verified: the dumps' host name when it differs from the node, else "" */
  struct evidence *ev;
  size_t nev, capev;
  struct gpu *gpus; /* the GPUs of the ranks the evidence names */
  size_t ngpus, capgpus;
  size_t jobs_seen, jobs_implicated, jobs_straggler;
  size_t last_seen_dir, last_impl_dir, last_strag_dir; /* +1: 0 = none yet */
  long long uids[2];                                   /* the first two users whose jobs implicate it (-1: none) */
  size_t nuids;
  int level;
  bool unconfirmed; /* drain-level evidence of fewer than two users: watch until a check fails */
  int check;        /* the site's check (--verify-cmd): 0 not run, 1 passed, 2 failed, 3 could not run */
  UT_hash_handle hh;
};

/* a straggler finding charged to no node (tools/suspects_aside.c) */
struct aside {
  size_t dir;
  long long rank;
  const char *kind; /* cleared, uneven_data, data_loader (static) */
  char host[128];
  double cleared_s; /* cleared: how long before the job's end (s of its clock), else NAN */
  char detail[320];
};

struct suspects {
  struct host *hosts; /* uthash by key */
  const char **dirs, **jobs;
  size_t ndirs;
  struct sn_dir *nodes;   /* per DIR: its node records and dump headers */
  bool trust_names;       /* --trust-host-names: act on plain host names no record vouches for */
  const char *verify_cmd; /* --verify-cmd: the site's check of one node (%n), run for unconfirmed drains */
  long long *uids;        /* per DIR: its job's user (node records, or the directory's owner with
                           --trust-host-names), -1 unknown */
  double cleared_after;   /* --cleared-after: a straggler cleared longer before the job's end is set aside */
  struct aside *aside;    /* the straggler findings set aside */
  size_t naside, capaside;
};

/* DIR d's report document (cli_report_json) into s: the hosts and GPUs it implicates, with
 * their evidence, and the hosts it saw */
void suspects_gather(struct suspects *s, size_t d, json_t *doc);
/* each host's level from its evidence, once every DIR is gathered: drain only when jobs of
 * two users implicate it (else watch, unconfirmed, until the site's check fails) */
void suspects_classify(struct suspects *s);
/* straggler finding o of DIR d's report doc: true when it is set aside (s->aside says why);
 * *cleared_s: how long before the job's end it cleared (NAN: ongoing or unknown) */
bool suspects_straggler_aside(struct suspects *s, size_t d, json_t *doc, json_t *o, double *cleared_s);
/* a string field of a JSON object, NULL when absent or not a string */
const char *suspects_jstr(json_t *o, const char *k);

#endif
