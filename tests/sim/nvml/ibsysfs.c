/* tests/sim/nvml/ibsysfs.c: the simulated host's InfiniBand sysfs tree. With
 * COLLSCOPE_SIM_SYSFS=DIR, DIR/<host>/class/infiniband/<dev>/ports/<p>/ holds counters/,
 * hw_counters/, state and rate as Linux has them, for mlx5_0 and mlx5_1 (port 1) and every
 * device an `ib:` fault names on this host. Counters rise by the fault's N over the ramp
 * (simhealth.h) from the host's start (the first simulated process there writes DIR/<host>/t0);
 * the host's local rank 0 (or a process without LOCAL_RANK) rewrites them (write to a
 * temporary, rename) at most every 20 ms, from its nvmlEventSetWait_v2 calls. */
#include "simhealth.h"
#include "simcuda.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long long host_t0_ns = -1, last_tick_ns;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
static void mkdirs(char *path) {
  for (char *p = path + 1; *p; p++)
    if (*p == '/') { *p = 0; mkdir(path, 0755); *p = '/'; }
  mkdir(path, 0755);
}
static void put_file(const char *dir, const char *name, const char *text) {
  char tmp[3000], fin[3000];
  snprintf(fin, sizeof fin, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, name, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fputs(text, f);
  if (fclose(f) == 0) rename(tmp, fin);
  else unlink(tmp);
}
static long long read_t0(const char *hostdir) {
  char p[4096];
  snprintf(p, sizeof p, "%s/t0", hostdir);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd >= 0) {
    char b[32];
    int n = snprintf(b, sizeof b, "%lld\n", now_ns());
    if (write(fd, b, (size_t)n) != n) {}
    close(fd);
  }
  FILE *f = fopen(p, "r");
  long long t = -1;
  if (f) { if (fscanf(f, "%lld", &t) != 1) t = -1; fclose(f); }
  return t > 0 ? t : now_ns();
}

static void write_port(const char *hostdir, const char *dev, int port, double ms) {
  static const char *const names[] = {"symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
                                      "port_xmit_discards", "port_xmit_wait", "local_link_integrity_errors",
                                      "excessive_buffer_overrun_errors", "port_xmit_data", "port_rcv_data"};
  long long v[10] = {0}, hw[4] = {0};   /* hw: out_of_sequence, packet_seq_err, np_cnp_sent, rp_cnp_handled */
  const char *host = simcuda_hostname();
  for (int i = 0; i < sh_nfaults; i++) {
    const struct sh_fault *f = &sh_faults[i];
    if (f->kind != SH_IB || strcmp(f->host, host) || strcmp(f->dev, dev) || f->port != port) continue;
    v[0] += sh_ramp(f->symbol_error, ms);
    v[1] += sh_ramp(f->link_downed, ms);
    v[5] += sh_ramp(f->xmit_wait, ms);
    hw[2] += sh_ramp(f->cnp, ms);
    hw[3] += sh_ramp(f->cnp, ms);
  }
  v[8] = v[9] = (long long)(ms * 1000);   /* traffic, in 4-byte words as the kernel counts */
  char dir[2400], sub[2600], t[64];
  snprintf(dir, sizeof dir, "%s/class/infiniband/%s/ports/%d", hostdir, dev, port);
  snprintf(sub, sizeof sub, "%s/counters", dir);
  mkdirs(sub);
  for (int i = 0; i < 10; i++) { snprintf(t, sizeof t, "%lld\n", v[i]); put_file(sub, names[i], t); }
  snprintf(sub, sizeof sub, "%s/hw_counters", dir);
  mkdirs(sub);
  static const char *const hwn[] = {"out_of_sequence", "packet_seq_err", "np_cnp_sent", "rp_cnp_handled"};
  for (int i = 0; i < 4; i++) { snprintf(t, sizeof t, "%lld\n", hw[i]); put_file(sub, hwn[i], t); }
  put_file(dir, "state", "4: ACTIVE\n");
  put_file(dir, "rate", "400 Gb/sec (4X NDR)\n");
}

void sh_ibsysfs_tick(void) {
  const char *root = getenv("COLLSCOPE_SIM_SYSFS"), *lr = getenv("LOCAL_RANK");
  if (!root || !*root) return;
  if (lr && *lr && atoi(lr) != 0) return;   /* one writer per host: its local rank 0 */
  sh_init();
  long long now = now_ns();
  pthread_mutex_lock(&mu);
  if (now - last_tick_ns < 20000000LL) { pthread_mutex_unlock(&mu); return; }
  last_tick_ns = now;
  char hostdir[2048];
  snprintf(hostdir, sizeof hostdir, "%s/%s", root, simcuda_hostname());
  if (host_t0_ns < 0) { mkdirs(hostdir); host_t0_ns = read_t0(hostdir); }
  double ms = (double)(now - host_t0_ns) / 1e6;
  write_port(hostdir, "mlx5_0", 1, ms);
  write_port(hostdir, "mlx5_1", 1, ms);
  for (int i = 0; i < sh_nfaults; i++) {
    const struct sh_fault *f = &sh_faults[i];
    if (f->kind != SH_IB || strcmp(f->host, simcuda_hostname())) continue;
    if ((!strcmp(f->dev, "mlx5_0") || !strcmp(f->dev, "mlx5_1")) && f->port == 1) continue;
    write_port(hostdir, f->dev, f->port, ms);
  }
  pthread_mutex_unlock(&mu);
}
