/* tests/integration/local_main.c: a program that does not link NCCL at all.
 *   local_main LIB      dlopen(LIB, RTLD_LOCAL) and run its allreduce
 *   local_main nolib    call ncclAllReduce found by name when no NCCL is loaded: with
 *                       the shim preloaded this must return an error, never crash */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (!strcmp(argv[1], "nolib")) {
    int (*ar)(const void *, void *, size_t, int, int, void *, void *) =
        (int (*)(const void *, void *, size_t, int, int, void *, void *))dlsym(RTLD_DEFAULT, "ncclAllReduce");
    if (!ar) {
      printf("no ncclAllReduce in scope\n");
      return 0;
    }
    int c1 = ar(NULL, NULL, 0, 7, 0, NULL, NULL);
    int c2 = ar(NULL, NULL, 0, 7, 0, NULL, NULL);
    printf("codes %d %d\n", c1, c2);
    return 0;
  }
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  int (*fn)(float *) = (int (*)(float *))dlsym(h, "local_allreduce");
  if (!fn) return 4;
  float out[4];
  int rc = fn(out);
  printf("rc %d result %g %g %g %g\n", rc, out[0], out[1], out[2], out[3]);
  return rc;
}
