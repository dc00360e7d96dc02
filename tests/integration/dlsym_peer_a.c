/* tests/integration/dlsym_peer_a.c: the first of two libraries that define the same function
 * (dlsym_main.c): what a lookup relative to this library (RTLD_NEXT) finds is the second's. */
#include <dlfcn.h>

__attribute__((visibility("default"))) int dlsym_probe_value(void) { return 1; }

/* RTLD_NEXT from here: the next definition after this library (dlsym_peer_b's). Not a tail
 * call (the empty asm after it), so that dlsym's caller is this library, not the program. */
__attribute__((visibility("default"))) void *dlsym_probe_next(void) {
  void *p = dlsym(RTLD_NEXT, "dlsym_probe_value");
  __asm__ volatile("" ::
                       : "memory");
  return p;
}
