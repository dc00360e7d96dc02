/* tests/sim/api/test_hostname.c: a program linked against the REAL libraries (like a user's
 * job) asks for its host name the two ways programs that group ranks by host do:
 * gethostname() (a host hash) and uname().nodename. On the simulator, with
 * COLLSCOPE_HOSTNAME set, both must give that name; without it, the machine's own name (the
 * kernel's, read with the raw uname system call).
 * Built twice: using NCCL and the runtime (WITH_NCCL), and the runtime alone.
 * usage: test_hostname EXPECTED   (EXPECTED "-": the machine's name) */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#ifdef WITH_NCCL
#include <nccl.h>
#endif

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: %s EXPECTED|-\n", argv[0]); return 2; }
    /* a real job uses the libraries it links (which also keeps them in its NEEDED list) */
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess || v < 13000) { fprintf(stderr, "runtime %d\n", v); return 1; }
#ifdef WITH_NCCL
    if (ncclGetVersion(&v) != ncclSuccess) { fprintf(stderr, "ncclGetVersion\n"); return 1; }
#endif
    struct utsname kernel, seen;
    if (syscall(SYS_uname, &kernel) != 0) { perror("SYS_uname"); return 1; }
    const char *want = strcmp(argv[1], "-") ? argv[1] : kernel.nodename;

    char name[256];
    if (gethostname(name, sizeof name) != 0) { perror("gethostname"); return 1; }
    if (uname(&seen) != 0) { perror("uname"); return 1; }
    printf("gethostname=%s uname=%s kernel=%s\n", name, seen.nodename, kernel.nodename);
    int bad = 0;
    if (strcmp(name, want)) { fprintf(stderr, "gethostname: %s, want %s\n", name, want); bad = 1; }
    if (strcmp(seen.nodename, want)) { fprintf(stderr, "uname: %s, want %s\n", seen.nodename, want); bad = 1; }
    if (strcmp(seen.sysname, kernel.sysname) || strcmp(seen.release, kernel.release)) {
        fprintf(stderr, "uname changed more than the node name\n");
        bad = 1;
    }
    /* a buffer without room for the terminator: ENAMETOOLONG, as glibc gives */
    size_t n = strlen(want);
    char small[256];
    errno = 0;
    if (n > 0 && n < sizeof small && (gethostname(small, n) == 0 || errno != ENAMETOOLONG)) {
        fprintf(stderr, "gethostname with %zu bytes: want -1/ENAMETOOLONG, got errno %d\n", n, errno);
        bad = 1;
    }
    return bad;
}
