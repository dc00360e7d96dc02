/* CUDA IPC between simulated processes of one host: the parent exports a device allocation
 * and an interprocess event; a child (this program re-executed) opens both, reads and writes
 * the memory, and sees the event pending until the parent's stream reaches its record (its
 * query says NotReady, a stream waiting on it does not run). A child on another simulated
 * host cannot open the handles. Error codes as CUDA 13 documents them. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simtest.h"

#define N 4096

static void to_hex(const void *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", ((const unsigned char *)p)[i]);
}

static int from_hex(const char *s, void *p, size_t n)
{
    if (strlen(s) != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1;
        ((unsigned char *)p)[i] = (unsigned char)v;
    }
    return 0;
}

/* ---------------------------------------------------------------- child */
static atomic_int ran_after_wait;
static void CUDART_CB mark(void *p) { (void)p; atomic_store(&ran_after_wait, 1); }

static int child(const char *mode, const char *mh_hex, const char *eh_hex, int to_parent)
{
    cudaIpcMemHandle_t mh;
    cudaIpcEventHandle_t eh;
    REQUIRE(from_hex(mh_hex, &mh, sizeof mh) == 0 && from_hex(eh_hex, &eh, sizeof eh) == 0);
    int *d = NULL;
    cudaEvent_t e = NULL;
    if (!strcmp(mode, "otherhost")) {
        CHECK_EQ(cudaIpcOpenMemHandle((void **)&d, mh, cudaIpcMemLazyEnablePeerAccess), cudaErrorInvalidResourceHandle);
        CHECK_EQ(cudaIpcOpenEventHandle(&e, eh), cudaErrorInvalidResourceHandle);
        return simtest_done("simcuda_ipc (other host)");
    }
    static int h[N];
    REQUIRE(cudaIpcOpenMemHandle((void **)&d, mh, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess);
    CHECK_EQ(cudaIpcOpenMemHandle((void **)&d, mh, 7), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    int same = 1;
    for (int i = 0; i < N; i++) same &= h[i] == i;
    CHECK(same);
    for (int i = 0; i < N; i++) h[i] = 3 * i;
    CHECK_EQ(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ(cudaFree(d), cudaErrorInvalidValue);   /* opened, not allocated here */

    REQUIRE(cudaIpcOpenEventHandle(&e, eh) == cudaSuccess);
    CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);       /* the parent's stream is held */
    cudaStream_t s;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s, e, 0), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, mark, NULL), cudaSuccess);
    sleep_ms(100);
    CHECK_EQ(atomic_load(&ran_after_wait), 0);             /* the wait holds the stream */
    CHECK_EQ(cudaEventRecord(e, s), cudaErrorNotSupported); /* only the exporter records */
    REQUIRE(write(to_parent, "R", 1) == 1);                 /* parent: release your stream */
    CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
    CHECK_EQ(cudaEventQuery(e), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(atomic_load(&ran_after_wait), 1);
    CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
    CHECK_EQ(cudaIpcCloseMemHandle(d), cudaSuccess);
    CHECK_EQ(cudaIpcCloseMemHandle(d), cudaErrorInvalidValue);
    cudaIpcMemHandle_t junk;
    memset(&junk, 0x5a, sizeof junk);
    CHECK_EQ(cudaIpcOpenMemHandle((void **)&d, junk, 0), cudaErrorInvalidResourceHandle);
    return simtest_done("simcuda_ipc (child)");
}

/* ---------------------------------------------------------------- parent */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;
static void CUDART_CB gate(void *p)
{
    (void)p;
    pthread_mutex_lock(&gate_mu);
    while (!gate_open) pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
}

static pid_t spawn(const char *self, const char *mode, const char *mh, const char *eh, int wfd, const char *host)
{
    pid_t pid = fork();
    if (pid == 0) {
        char fdarg[16];
        snprintf(fdarg, sizeof fdarg, "%d", wfd);
        if (host) setenv("COLLSCOPE_HOSTNAME", host, 1);
        execl(self, self, mode, mh, eh, fdarg, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int child_status(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
    if (argc == 5) return child(argv[1], argv[2], argv[3], atoi(argv[4]));
    static int h[N];
    int *d = NULL, *m = NULL;
    REQUIRE(cudaMalloc((void **)&d, sizeof h) == cudaSuccess);
    for (int i = 0; i < N; i++) h[i] = i;
    REQUIRE(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice) == cudaSuccess);

    cudaIpcMemHandle_t mh;
    REQUIRE(cudaIpcGetMemHandle(&mh, d) == cudaSuccess);
    CHECK_EQ(cudaIpcGetMemHandle(&mh, d + 1), cudaErrorInvalidValue);   /* not the base */
    REQUIRE(cudaMallocManaged((void **)&m, 64, cudaMemAttachGlobal) == cudaSuccess);
    cudaIpcMemHandle_t mh2;
    CHECK_EQ(cudaIpcGetMemHandle(&mh2, m), cudaErrorInvalidValue);       /* managed memory */
    void *self_open = NULL;
    CHECK_EQ(cudaIpcOpenMemHandle(&self_open, mh, 0), cudaErrorDeviceUninitialized);   /* same process */
    /* the exporter's own pointer still reads what it wrote after the shared backing came in */
    CHECK_EQ(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK_EQ(h[N - 1], N - 1);

    cudaEvent_t plain, ev;
    cudaIpcEventHandle_t eh;
    REQUIRE(cudaEventCreate(&plain) == cudaSuccess);
    CHECK_EQ(cudaIpcGetEventHandle(&eh, plain), cudaErrorInvalidValue);   /* not interprocess */
    REQUIRE(cudaEventCreateWithFlags(&ev, cudaEventInterprocess | cudaEventDisableTiming) == cudaSuccess);
    cudaStream_t s;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    REQUIRE(cudaLaunchHostFunc(s, gate, NULL) == cudaSuccess);
    REQUIRE(cudaEventRecord(ev, s) == cudaSuccess);
    REQUIRE(cudaIpcGetEventHandle(&eh, ev) == cudaSuccess);

    char mhx[2 * sizeof mh + 1], ehx[2 * sizeof eh + 1];
    to_hex(&mh, sizeof mh, mhx);
    to_hex(&eh, sizeof eh, ehx);
    int pfd[2];
    REQUIRE(pipe(pfd) == 0);
    pid_t pid = spawn("/proc/self/exe", "child", mhx, ehx, pfd[1], NULL);
    REQUIRE(pid > 0);
    close(pfd[1]);
    char c = 0;
    CHECK(read(pfd[0], &c, 1) == 1 && c == 'R');
    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    CHECK_EQ(child_status(pid), 0);
    close(pfd[0]);

    CHECK_EQ(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    int seen = 1;
    for (int i = 0; i < N; i++) seen &= h[i] == 3 * i;
    CHECK(seen);   /* the child's writes */

    pid = spawn("/proc/self/exe", "otherhost", mhx, ehx, 2, "ipc-other-host");
    REQUIRE(pid > 0);
    CHECK_EQ(child_status(pid), 0);

    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(ev), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(plain), cudaSuccess);
    CHECK_EQ(cudaFree(d), cudaSuccess);
    CHECK_EQ(cudaFree(m), cudaSuccess);
    return simtest_done("simcuda_ipc");
}
