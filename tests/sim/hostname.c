/* tests/sim/hostname.c: what a simulated process sees of its host. Under `collscope run
 * --hosts` each rank gets COLLSCOPE_HOSTNAME, and the simulator and the shim place the rank
 * on that host; programs that group ranks by host name (a host hash, an MPI-style local
 * rank) ask gethostname() or uname() instead. Each simulator library (libcuda.so.1,
 * libcudart.so.13, libnccl.so.2) defines both, so whichever of them a program links
 * directly comes before libc in the symbol search order: with COLLSCOPE_HOSTNAME set and
 * not empty they report it (at most HOST_NAME_MAX bytes, as the kernel would hold), else
 * they call the next definition (dlsym(RTLD_NEXT): another sim library's, then libc's). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#define SIMHOST_API __attribute__((visibility("default")))

/* the simulated host name and its length (capped at HOST_NAME_MAX), or NULL */
static const char *sim_host(size_t *len)
{
    const char *h = getenv("COLLSCOPE_HOSTNAME");
    if (!h || !*h) return NULL;
    *len = strnlen(h, HOST_NAME_MAX);
    return h;
}

SIMHOST_API int gethostname(char *name, size_t len)
{
    size_t n;
    const char *h = sim_host(&n);
    if (!h) {
        int (*next)(char *, size_t) = (int (*)(char *, size_t))dlsym(RTLD_NEXT, "gethostname");
        if (!next) { errno = ENOSYS; return -1; }
        return next(name, len);
    }
    /* glibc: the name and its terminator must fit, else ENAMETOOLONG */
    if (len <= n) { errno = ENAMETOOLONG; return -1; }
    memcpy(name, h, n);
    name[n] = '\0';
    return 0;
}

SIMHOST_API int uname(struct utsname *buf)
{
    int (*next)(struct utsname *) = (int (*)(struct utsname *))dlsym(RTLD_NEXT, "uname");
    if (!next) { errno = ENOSYS; return -1; }
    int r = next(buf);
    size_t n;
    const char *h = sim_host(&n);
    if (r == 0 && h) {
        if (n > sizeof buf->nodename - 1) n = sizeof buf->nodename - 1;
        memcpy(buf->nodename, h, n);
        buf->nodename[n] = '\0';
    }
    return r;
}
