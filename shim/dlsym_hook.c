/* shim/dlsym_hook.c: the driver's graph entry points for programs that look them up on the
 * driver's own handle. XLA's library stubs (tsl/cuda/cuda_stub.cc) dlopen libcuda.so.1 and
 * dlsym(handle, "cuGraphLaunch") (and the capture calls): that lookup searches the driver, never LD_PRELOAD, so the
 * shim's exported cuGraphLaunch (shim/cudart_wrappers.c) would not see a replay. collscope
 * exports dlsym: a lookup on an explicit handle that finds one of the driver functions the
 * shim wraps (CUDRV_GRAPH rows of shim/cudart_api.def) in the CUDA driver gets the shim's
 * wrapper, which forwards to that same driver function; every other lookup is glibc's own
 * answer, unchanged.
 *
 * RTLD_NEXT and RTLD_DEFAULT depend on the caller's object (glibc reads dlsym's return
 * address), so those two reach glibc's dlsym by a jump, leaving the caller's return address
 * in place: a small x86-64 entry stub. Elsewhere (another architecture, a ThreadSanitizer
 * build) dlsym is not exported and such programs' replays stay unseen (docs/timing.md). Built
 * into libcollscope.so only (shim/meson.build), not into the objects tests link. */
#include "cs_internal.h"
#include <dlfcn.h>
#include <string.h>

/* (not under ThreadSanitizer: its runtime resolves its interceptors with dlsym before it can
 * run instrumented code) */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CS_NO_DLSYM_HOOK 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CS_NO_DLSYM_HOOK 1
#endif

#if defined(__x86_64__) && defined(__linux__) && !defined(CS_NO_DLSYM_HOOK)

/* glibc's dlsym, resolved once (dlvsym is not interposed); read by the entry stub */
__attribute__((visibility("hidden"))) void *(*cs_real_dlsym)(void *, const char *);

__attribute__((visibility("hidden"))) void *cs_dlsym_resolve(void) {
  void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!p) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  if (p) __atomic_store_n(&cs_real_dlsym, (void *(*)(void *, const char *))p, __ATOMIC_RELEASE);
  return p;
}

/* the shim's driver wrapper for `name`, NULL when the shim wraps no such function */
void *cs_cudrv_wrapper(const char *name);

/* A lookup on an explicit handle (the stub's call; the caller's object does not matter here). */
__attribute__((visibility("hidden"))) void *cs_dlsym_handle(void *handle, const char *name) {
  void *p = cs_real_dlsym(handle, name);
  if (!p || !name || (strncmp(name, "cuGraph", 7) != 0 && strncmp(name, "cuStream", 8) != 0) || cs_cfg.disabled) return p;
  void *w = cs_cudrv_wrapper(name);
  if (!w || w == p) return p;
  /* only when what the handle gave is the CUDA driver's own function: the object that
   * defines p also defines the driver's version query */
  void *ver = cs_real_dlsym(handle, "cuDriverGetVersion");
  Dl_info a, b;
  if (!ver || !dladdr(p, &a) || !dladdr(ver, &b) || a.dli_fbase != b.dli_fbase) return p;
  return w;
}

/* dlsym: RTLD_DEFAULT (0) and RTLD_NEXT (-1) jump to glibc's, every other handle to
 * cs_dlsym_handle; the first call resolves glibc's (registers saved around it). */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym,@function\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
        "  endbr64\n"
        "  movq cs_real_dlsym(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 2f\n"
        "1:\n"
        "  testq %rdi, %rdi\n"
        "  jz 3f\n"
        "  cmpq $-1, %rdi\n"
        "  je 3f\n"
        "  jmp cs_dlsym_handle\n"
        "3:\n"
        "  jmp *%rax\n"
        "2:\n"
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  call cs_dlsym_resolve\n"
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  testq %rax, %rax\n"
        "  jnz 1b\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n");

#endif
