/* tests/integration/dlsym_main.c: what dlsym answers, printed, the same with and without
 * collscope preloaded (shim/dlsym_hook.c exports dlsym): RTLD_NEXT relative to its caller (the
 * main program, and a library), RTLD_DEFAULT, an explicit handle; and on the CUDA driver's own
 * handle (argv[1]) a graph launch and a capture call the shim wraps are the shim's
 * ("wrapped=1" with collscope, 0 without) while a function it does not wrap is the driver's. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int dlsym_probe_value(void);
void *dlsym_probe_next(void);
int dlsym_probe_b_marker(void);

static int call(void *f) { return f ? ((int (*)(void))f)() : -1; }

/* 1 when p lies in an object whose file name contains `name` */
static int in_object(void *p, const char *name) {
  Dl_info i;
  return p && dladdr(p, &i) && i.dli_fname && strstr(i.dli_fname, name) ? 1 : 0;
}

int main(int argc, char **argv) {
  printf("main_next %d\n", call(dlsym(RTLD_NEXT, "dlsym_probe_value")));
  printf("lib_next %d\n", call(dlsym_probe_next()));
  printf("default %d\n", call(dlsym(RTLD_DEFAULT, "dlsym_probe_value")));
  void *hb = dlopen("libdlsym_peer_b.so", RTLD_NOW | RTLD_NOLOAD);
  printf("handle_b %d\n", hb ? call(dlsym(hb, "dlsym_probe_value")) : -1);
  printf("missing %s\n", dlsym(RTLD_DEFAULT, "dlsym_probe_no_such") ? "found" : "null");
  if (argc > 1) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    void *launch = h ? dlsym(h, "cuGraphLaunch") : NULL, *cap = h ? dlsym(h, "cuStreamBeginCapture_v2") : NULL;
    void *other = h ? dlsym(h, "cuMemAlloc_v2") : NULL;
    printf("driver launch_wrapped=%d capture_wrapped=%d other_driver=%d\n", in_object(launch, "libcollscope"),
           in_object(cap, "libcollscope"), in_object(other, "libcuda"));
  }
  return dlsym_probe_value() == 1 ? dlsym_probe_b_marker() : 1;
}
