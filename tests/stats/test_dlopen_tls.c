/* tests/stats/test_dlopen_tls.c: libcollscope loaded the way NCCL loads a profiler or
 * net plugin -- dlopen, no LD_PRELOAD -- while a thread that already existed before the
 * dlopen then makes the intercepted calls. The library's per-thread state uses the
 * initial-exec TLS model (hooks/thread_state.h), so glibc must place it in the static TLS
 * surplus at dlopen time and give the older thread its own initialised copy; a library
 * whose TLS is too large fails to load here ("cannot allocate memory in static TLS
 * block"). The calls run in a child process, whose dump must hold every op. NCCL is the
 * null backend, which the shim loads itself (COLLSCOPE_LIBNCCL).
 *   test_dlopen_tls LIBCOLLSCOPE NULL_LIBCUDA NULL_LIBNCCL                           */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CALLS 100
/* The library's TLS segment may not grow past this: glibc's surplus for libraries loaded
 * later is shared by every one of them (CUDA, NCCL and its plugins, the framework's) */
#define TLS_BUDGET 256

typedef ncclResult_t (*get_id_fn)(ncclUniqueId *);
typedef ncclResult_t (*init_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                     cudaStream_t);
typedef ncclResult_t (*destroy_fn)(ncclComm_t);

static void *lib;
static int go[2];

/* the thread started before the dlopen: waits for it, then calls through the library */
static void *old_thread(void *arg) {
  (void)arg;
  char b;
  if (read(go[0], &b, 1) != 1 || !lib) return (void *)1;
  get_id_fn get_id = (get_id_fn)dlsym(lib, "ncclGetUniqueId");
  init_fn init = (init_fn)dlsym(lib, "ncclCommInitRank");
  allreduce_fn allreduce = (allreduce_fn)dlsym(lib, "ncclAllReduce");
  destroy_fn destroy = (destroy_fn)dlsym(lib, "ncclCommDestroy");
  if (!get_id || !init || !allreduce || !destroy) return (void *)2;
  ncclUniqueId id;
  ncclComm_t comm;
  if (get_id(&id) != ncclSuccess || init(&comm, 8, id, 0) != ncclSuccess) return (void *)3;
  float buf[4] = {0};
  for (int i = 0; i < CALLS; i++)
    if (allreduce(buf, buf, 4, ncclFloat, ncclSum, comm, NULL) != ncclSuccess) return (void *)4;
  if (destroy(comm) != ncclSuccess) return (void *)5;
  return NULL;
}

/* the PT_TLS size of the loaded object whose name ends in `base` */
struct tls_find {
  const char *base;
  long memsz;
};
static int tls_of(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct tls_find *f = arg;
  size_t n = strlen(info->dlpi_name), b = strlen(f->base);
  if (n < b || strcmp(info->dlpi_name + n - b, f->base)) return 0;
  f->memsz = 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_TLS) f->memsz = (long)info->dlpi_phdr[i].p_memsz;
  return 1;
}

static int child(const char *shim) {
  pthread_t th;
  if (pipe(go) || pthread_create(&th, NULL, old_thread, NULL)) return 10;
  lib = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
  if (!lib) fprintf(stderr, "FAIL: dlopen %s: %s\n", shim, dlerror());
  if (write(go[1], "x", 1) != 1) return 11;
  void *res;
  pthread_join(th, &res);
  if (!lib) return 12;
  const char *slash = strrchr(shim, '/');
  struct tls_find f = {slash ? slash + 1 : shim, -1};
  dl_iterate_phdr(tls_of, &f);
  if (f.memsz < 0 || f.memsz > TLS_BUDGET) {
    fprintf(stderr, "FAIL: the library's TLS segment is %ld bytes (budget %d)\n", f.memsz, TLS_BUDGET);
    return 14;
  }
  if (res) {
    fprintf(stderr, "FAIL: the thread started before the dlopen: step %ld failed\n", (long)(intptr_t)res);
    return 13;
  }
  return 0;
}

/* op lines in the dump files of dir */
static long count_ops(const char *dir) {
  long n = 0;
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strstr(e->d_name, ".jsonl")) continue;
    char path[4096], line[8192];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    while (fgets(line, sizeof(line), f))
      if (!strncmp(line, "{\"type\":\"op\"", 12) && strstr(line, "\"AllReduce\"")) n++;
    fclose(f);
  }
  closedir(d);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LIBCOLLSCOPE NULL_LIBCUDA NULL_LIBNCCL\n", argv[0]);
    return 2;
  }
  char dir[] = "/tmp/collscope-dlopen-tls-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  unsetenv("LD_PRELOAD");
  unsetenv("COLLSCOPE_DISABLE");
  setenv("COLLSCOPE_LIBCUDA", argv[2], 1);
  setenv("COLLSCOPE_LIBNCCL", argv[3], 1);
  setenv("COLLSCOPE_DIR", dir, 1);
  pid_t pid = fork();
  if (pid == 0) exit(child(argv[1])); /* exit, not _exit: the shim writes its dump at exit */
  int st = 0;
  waitpid(pid, &st, 0);
  long ops = count_ops(dir);
  char cmd[4200];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    fprintf(stderr, "FAIL: the child ended with status %d\n", st);
    return 1;
  }
  if (ops != CALLS) {
    fprintf(stderr, "FAIL: %ld AllReduce records in the dump, want %d\n", ops, CALLS);
    return 1;
  }
  printf("dlopen without LD_PRELOAD, calls from a thread older than the dlopen: %ld records\n", ops);
  return 0;
}
