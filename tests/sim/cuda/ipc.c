/* tests/sim/cuda/ipc.c: CUDA IPC memory handles between simulated processes of one host.
 *
 * Device memory is host memory private to each process, so an allocation gets a shared
 * backing the first time a handle is taken for it: cuIpcGetMemHandle synchronises the
 * allocation's device, copies the pages into a memfd and moves a shared mapping of the memfd
 * over the allocation's own address range (mremap), so the exporter's pointer stays valid
 * and sees every later write of an importer. The handle names the memfd as
 * /proc/<pid>/fd/<fd> plus its inode, size and the simulated host; cuIpcOpenMemHandle in
 * another process opens that path (the exporter must still be alive, as on a GPU where the
 * allocation dies with its process), checks inode, size and host, and maps it.
 *
 * Codes, as CUDA 13 documents or returns them: a pointer that is not the base of a device
 * allocation (managed, host, interior) InvalidValue; opening in the exporting process
 * InvalidContext ("invalid device context"); a handle from another simulated host, a dead
 * exporter or garbage InvalidHandle; flags other than CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
 * InvalidValue; closing a pointer that cuIpcOpenMemHandle did not return InvalidValue.
 *
 * Event handles: an event created with CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING gets
 * a shared page (struct sim_ipc_event, also a memfd named through /proc) holding its record
 * and completion generations; the exporter publishes every record and completion there. An
 * opened event answers query and synchronize from the page and cuStreamWaitEvent on it
 * blocks the stream until the record that was last at the call completed (futex on the
 * page, no spinning). Recording an opened event is not simulated (CUDA_ERROR_NOT_SUPPORTED),
 * nor waiting on one inside a stream capture. */
#include "sim_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

SIMCUDA_API_BEGIN

#define IPC_MAGIC 0x43504953u   /* "SIPC" */

struct ipc_mem_handle {         /* the first bytes of CUipcMemHandle.reserved */
    uint32_t magic, version;
    int32_t pid, fd;
    uint64_t size, ino, host;
};
_Static_assert(sizeof(struct ipc_mem_handle) <= CU_IPC_HANDLE_SIZE, "handle too big");

static pthread_mutex_t ipc_mu = PTHREAD_MUTEX_INITIALIZER;

/* a handle names a memfd of another process: check it is that file, of that size, and map it */
static void *map_peer_fd(int32_t pid, int32_t fd, uint64_t ino, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0) return NULL;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(f, &st) == 0 && (uint64_t)st.st_ino == ino && S_ISREG(st.st_mode) && (uint64_t)st.st_size == len)
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    close(f);   /* the mapping keeps the file */
    return p == MAP_FAILED ? NULL : p;
}

static uint64_t host_hash(void)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (const char *p = simcuda_hostname(); *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* give the device allocation a (once) a memfd backing in place; returns the fd or -1 */
static int share_allocation(const struct sim_alloc *a)
{
    if (a->ipc_fd > 0) return a->ipc_fd - 1;
    size_t len = alloc_map_len(a->size);
    device_sync(a->device);   /* nothing queued may write the old pages after the copy */
    int fd = memfd_create("collscope-sim-ipc", MFD_CLOEXEC);
    if (fd < 0) return -1;
    void *tmp = MAP_FAILED;
    if (ftruncate(fd, (off_t)len) == 0)
        tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (tmp == MAP_FAILED) { close(fd); return -1; }
    memcpy(tmp, (void *)a->base, a->size);
    if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)a->base) == MAP_FAILED) {
        munmap(tmp, len);
        close(fd);
        return -1;
    }
    if (alloc_set_ipc_fd(a->base, fd) != 0) { close(fd); return -1; }   /* cannot happen under ipc_mu */
    return fd;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
    struct sim_alloc a;
    if (!h || !dptr) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&ipc_mu);
    if (!alloc_find((void *)dptr, &a) || a.base != dptr || a.kind != 1 || a.owned != SIM_OWN_MAP) {
        pthread_mutex_unlock(&ipc_mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    int fd = share_allocation(&a);
    pthread_mutex_unlock(&ipc_mu);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    struct ipc_mem_handle m = { IPC_MAGIC, 1, (int32_t)getpid(), fd, a.size, (uint64_t)st.st_ino, host_hash() };
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &m, sizeof m);
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *dptr, CUipcMemHandle h, unsigned int flags)
{
    struct ipc_mem_handle m;
    if (!dptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) return CUDA_ERROR_INVALID_VALUE;
    memcpy(&m, h.reserved, sizeof m);
    if (m.magic != IPC_MAGIC || m.version != 1 || m.pid <= 0 || m.fd < 0 || m.size == 0 ||
        m.size > (80ull << 30))   /* larger than a simulated device */
        return CUDA_ERROR_INVALID_HANDLE;
    if (m.pid == (int32_t)getpid()) return CUDA_ERROR_INVALID_CONTEXT;
    if (m.host != host_hash()) return CUDA_ERROR_INVALID_HANDLE;   /* another simulated host */
    void *p = map_peer_fd(m.pid, m.fd, m.ino, alloc_map_len(m.size));
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    alloc_add(p, m.size, 1, simcuda_current_device(), SIM_OWN_IPC, 0);
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    struct sim_alloc a;
    if (!dptr || !alloc_find((void *)dptr, &a) || a.base != dptr || a.owned != SIM_OWN_IPC)
        return CUDA_ERROR_INVALID_VALUE;
    device_sync(a.device);
    if (!alloc_remove((void *)dptr, 1 << 1, &a)) return CUDA_ERROR_INVALID_VALUE;
    alloc_release(&a);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- event handles */
struct ipc_event_handle {      /* the first bytes of CUipcEventHandle.reserved */
    uint32_t magic, version;
    int32_t pid, fd;
    uint64_t ino, host;
};
_Static_assert(sizeof(struct ipc_event_handle) <= CU_IPC_HANDLE_SIZE, "handle too big");
#define IPC_EV_MAGIC 0x45504953u   /* "SIPE" */
#define IPC_EV_LEN 4096u

static long futex(_Atomic uint32_t *w, int op, uint32_t v)
{
    return syscall(SYS_futex, (uint32_t *)w, op, v, NULL, NULL, 0);
}

void ipc_event_publish(struct sim_ipc_event *p, uint64_t rec, uint64_t done)
{
    atomic_store(&p->rec, (uint32_t)rec);
    if (atomic_exchange(&p->done, (uint32_t)done) != (uint32_t)done) futex(&p->done, FUTEX_WAKE, INT32_MAX);
}

int ipc_event_done(const struct sim_ipc_event *p, uint32_t target)
{
    return (int32_t)(atomic_load(&p->done) - target) >= 0;
}

void ipc_event_wait(struct sim_ipc_event *p, uint32_t target)
{
    for (;;) {
        uint32_t d = atomic_load(&p->done);
        if ((int32_t)(d - target) >= 0) return;
        futex(&p->done, FUTEX_WAIT, d);   /* shared (not _PRIVATE): the page is a memfd mapping */
    }
}

void ipc_event_unmap(struct sim_ipc_event *p, int fd)
{
    munmap(p, IPC_EV_LEN);
    if (fd >= 0) close(fd);
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *h, CUevent e)
{
    if (!h || !e) return CUDA_ERROR_INVALID_VALUE;
    if (!reg_ok(e, OBJ_EVENT)) return CUDA_ERROR_INVALID_HANDLE;
    if (!(e->flags & CU_EVENT_INTERPROCESS) || e->remote) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&ipc_mu);
    if (!e->ipc) {
        int fd = memfd_create("collscope-sim-ipc-event", MFD_CLOEXEC);
        void *p = MAP_FAILED;
        if (fd >= 0 && ftruncate(fd, IPC_EV_LEN) == 0)
            p = mmap(NULL, IPC_EV_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            if (fd >= 0) close(fd);
            pthread_mutex_unlock(&ipc_mu);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        event_ipc_attach(e, p, fd, 0);
    }
    int fd = e->ipc_fd - 1;
    pthread_mutex_unlock(&ipc_mu);
    struct stat st;
    if (fstat(fd, &st) != 0) return CUDA_ERROR_OPERATING_SYSTEM;
    struct ipc_event_handle m = { IPC_EV_MAGIC, 1, (int32_t)getpid(), fd, (uint64_t)st.st_ino, host_hash() };
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &m, sizeof m);
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenEventHandle(CUevent *out, CUipcEventHandle h)
{
    struct ipc_event_handle m;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    memcpy(&m, h.reserved, sizeof m);
    if (m.magic != IPC_EV_MAGIC || m.version != 1 || m.pid <= 0 || m.fd < 0) return CUDA_ERROR_INVALID_HANDLE;
    if (m.pid == (int32_t)getpid()) return CUDA_ERROR_INVALID_CONTEXT;
    if (m.host != host_hash()) return CUDA_ERROR_INVALID_HANDLE;
    void *p = map_peer_fd(m.pid, m.fd, m.ino, IPC_EV_LEN);
    if (!p) return CUDA_ERROR_INVALID_HANDLE;
    CUevent e;
    CUresult r = cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) { munmap(p, IPC_EV_LEN); return r; }
    event_ipc_attach(e, p, -1, 1);
    *out = e;
    return CUDA_SUCCESS;
}

SIMCUDA_API_END
