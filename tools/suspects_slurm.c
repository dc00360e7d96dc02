/* tools/suspects_slurm.c: see suspects_slurm.h. scontrol's one-line form (`-o`) is read token
 * by token (NodeList=, UserId=name(uid), JobState=); sacct's parsable form (NodeList|UID). A job
 * still COMPLETING is not read from scontrol: while its nodes run their epilogs, slurmctld gives
 * the nodes still completing, not the job's allocation (a job of n1 and n2 shown as NodeList=n1
 * once n2 finished), and a genuine record of n2 would be refused. sacct's accounting keeps the
 * whole allocation; without it scontrol is asked again until the job completes (a bounded wait),
 * else Slurm's word is not taken. */
#include "suspects_slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collscope/hostlist.h"

extern char **environ;

/* a COMPLETING job: scontrol asked again every SN_COMPLETING_WAIT_MS, SN_COMPLETING_TRIES times */
#define SN_COMPLETING_TRIES 20
#define SN_COMPLETING_WAIT_MS 500

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sn_run_capture(char *const argv[], char *out, size_t cap, int timeout_s, bool quiet) {
  int p[2];
  if (cap) out[0] = 0;
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (quiet) posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    return -1;
  }
  size_t n = 0;
  long long deadline = now_ms() + (long long)timeout_s * 1000;
  bool timed_out = false;
  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int r = poll(&pf, 1, (int)(left > 1000 ? 1000 : left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t k = read(p[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    size_t take = cap > n + 1 ? cap - n - 1 : 0;
    if ((size_t)k < take) take = (size_t)k;
    memcpy(out + n, buf, take);
    n += take;
  }
  close(p[0]);
  if (cap) out[n] = 0;
  if (timed_out) kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return -1;
  if (WIFEXITED(st)) return WEXITSTATUS(st) == 127 ? -1 : WEXITSTATUS(st);
  return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

static bool job_id_ok(const char *j) {
  size_t n = strlen(j);
  if (n == 0 || n > 24 || j[0] < '0' || j[0] > '9') return false;
  for (; *j; j++)
    if (!((*j >= '0' && *j <= '9') || *j == '_' || *j == '+')) return false;
  return true;
}

static bool set_nodes(struct sn_slurm *s, const char *list) {
  char err[128];
  if (!*list || !strcmp(list, "(null)") || !strncmp(list, "None", 4)) return false;
  char **hosts = NULL;
  size_t n = 0;
  if (cs_hostlist_expand_max(list, 65536, &hosts, &n, err, sizeof err) != 0) return false;
  cs_hostlist_free(s->nodes, s->nnodes);
  s->nodes = hosts, s->nnodes = n;
  snprintf(s->nodelist, sizeof s->nodelist, "%s", list);
  return true;
}

/* scontrol show job -o: one line per job (an array or heterogeneous job: several) */
static bool parse_scontrol(struct sn_slurm *s, char *text, bool *completing) {
  bool nodes = false, state = false;
  *completing = false;
  for (char *save = NULL, *t = strtok_r(text, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
    if (!strncmp(t, "JobState=", 9) && !state) {
      state = true;
      *completing = strstr(t + 9, "COMPLETING") != NULL;
    } else if (!strncmp(t, "NodeList=", 9) && !nodes)
      nodes = set_nodes(s, t + 9);
    else if (!strncmp(t, "UserId=", 7) && s->uid < 0) {
      const char *par = strchr(t, '(');
      char *end;
      long long u = par ? strtoll(par + 1, &end, 10) : -1;
      if (par && end != par + 1 && *end == ')' && u >= 0) s->uid = u;
    }
  }
  return nodes;
}

/* sacct -n -X -P -o NodeList,UID: "n[1-2]|1000" */
static bool parse_sacct(struct sn_slurm *s, char *text) {
  char *nl = strchr(text, '\n'), *bar = strchr(text, '|');
  if (nl) *nl = 0;
  if (!bar) return false;
  *bar = 0;
  char *end;
  long long u = strtoll(bar + 1, &end, 10);
  if (end != bar + 1 && *end == 0 && u >= 0) s->uid = u;
  return set_nodes(s, text);
}

/* what a parse left behind, dropped before the next answer is read */
static void sn_slurm_reset(struct sn_slurm *s) {
  sn_slurm_free(s);
  s->uid = -1;
  s->nodelist[0] = 0;
}

void sn_slurm_job(const char *job, struct sn_slurm *out) {
  memset(out, 0, sizeof *out);
  out->uid = -1;
  if (!job_id_ok(job)) {
    snprintf(out->why, sizeof out->why, "not a Slurm job id");
    return;
  }
  char *buf = malloc(65536);
  if (!buf) {
    snprintf(out->why, sizeof out->why, "out of memory");
    return;
  }
  char *sc[] = {"scontrol", "show", "job", "-o", (char *)job, NULL};
  char jarg[40];
  snprintf(jarg, sizeof jarg, "%s", job);
  char *sa[] = {"sacct", "-n", "-X", "-P", "-o", "NodeList,UID", "-j", jarg, NULL};
  bool completing = false, asked_sacct = false;
  for (int tries = 0; tries < SN_COMPLETING_TRIES; tries++) {
    if (tries) nanosleep(&(struct timespec){0, SN_COMPLETING_WAIT_MS * 1000000L}, NULL);
    sn_slurm_reset(out);
    if (sn_run_capture(sc, buf, 65536, 20, true) != 0 || !parse_scontrol(out, buf, &completing)) {
      completing = false;
      break;
    }
    if (!completing) {
      out->answered = true, out->via = "scontrol";
      break;
    }
    if (!asked_sacct) { /* the allocation from accounting, where the site keeps it */
      asked_sacct = true;
      sn_slurm_reset(out);
      if (sn_run_capture(sa, buf, 65536, 20, true) == 0 && parse_sacct(out, buf)) {
        out->answered = true, out->via = "sacct";
        break;
      }
    }
  }
  if (!out->answered) {
    sn_slurm_reset(out);
    if (completing)
      snprintf(out->why, sizeof out->why,
               "job %s still completing after %d s: scontrol lists only its nodes still completing, sacct does not "
               "know it",
               job, SN_COMPLETING_TRIES * SN_COMPLETING_WAIT_MS / 1000);
    else if (!asked_sacct && sn_run_capture(sa, buf, 65536, 20, true) == 0 && parse_sacct(out, buf))
      out->answered = true, out->via = "sacct";
    else
      snprintf(out->why, sizeof out->why, "neither scontrol nor sacct knows job %s", job);
  }
  free(buf);
}

void sn_slurm_free(struct sn_slurm *s) {
  cs_hostlist_free(s->nodes, s->nnodes);
  s->nodes = NULL, s->nnodes = 0;
}

bool sn_slurm_has_node(const struct sn_slurm *s, const char *node) {
  for (size_t i = 0; i < s->nnodes; i++)
    if (!strcmp(s->nodes[i], node)) return true;
  return false;
}
