/* tests/net/test_net_abi.c LIBCOLLSCOPE SIMNET: NCCL's net plugin ABI as collscope declares it
 * (include/collscope/nccl_net_abi.h). NCCL 2.28.9 installs no net-plugin header, so the
 * reference is the LP64 layout of NVIDIA/nccl src/include/plugin/net/net_v9.h, net_v10.h and
 * net_v11.h, written out below as literal sizes and offsets (the header pins the same figures
 * with static asserts; this test fails if either drifts). Then the exported tables:
 * libcollscope's ncclNetPlugin_v11/v10/v9 and simnet's ncclNetPlugin_v11 exist with the ELF
 * symbol sizes of those structs, every mandatory entry point is set, and the names are set. */
#include "collscope/nccl_net_abi.h"
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

static int fails;
#define CHECK(c) \
  do { \
    if (!(c)) { \
      fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #c); \
      fails++; \
    } \
  } while (0)

static size_t sym_size(void *h, const char *name, void **addr) {
  *addr = dlsym(h, name);
  if (!*addr) return 0;
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(*addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) return 0;
  return sym->st_size;
}

int main(int argc, char **argv) {
  /* ncclNetProperties_v9_t == _v10_t (104 bytes), _v11_t (112) */
  CHECK(offsetof(struct cs_net_props_v9, name) == 0);
  CHECK(offsetof(struct cs_net_props_v9, pciPath) == 8);
  CHECK(offsetof(struct cs_net_props_v9, guid) == 16);
  CHECK(offsetof(struct cs_net_props_v9, ptrSupport) == 24);
  CHECK(offsetof(struct cs_net_props_v9, regIsGlobal) == 28);
  CHECK(offsetof(struct cs_net_props_v9, forceFlush) == 32);
  CHECK(offsetof(struct cs_net_props_v9, speed) == 36);
  CHECK(offsetof(struct cs_net_props_v9, port) == 40);
  CHECK(offsetof(struct cs_net_props_v9, latency) == 44);
  CHECK(offsetof(struct cs_net_props_v9, maxComms) == 48);
  CHECK(offsetof(struct cs_net_props_v9, maxRecvs) == 52);
  CHECK(offsetof(struct cs_net_props_v9, netDeviceType) == 56);
  CHECK(offsetof(struct cs_net_props_v9, netDeviceVersion) == 60);
  CHECK(offsetof(struct cs_net_props_v9, vProps) == 64);
  CHECK(offsetof(struct cs_net_props_v9, maxP2pBytes) == 88);
  CHECK(offsetof(struct cs_net_props_v9, maxCollBytes) == 96);
  CHECK(sizeof(struct cs_net_props_v9) == 104);
  CHECK(offsetof(struct cs_net_props_v11, maxCollBytes) == 96);
  CHECK(offsetof(struct cs_net_props_v11, maxMultiRequestSize) == 104);
  CHECK(sizeof(struct cs_net_props_v11) == 112);
  CHECK(sizeof(struct cs_net_vprops) == 20 && sizeof(struct cs_net_comm_config) == 4);
  CHECK(sizeof(struct cs_net_attr_v11) == 44 && offsetof(struct cs_net_attr_v11, op) == 32);
  /* function tables: name, then one pointer per entry point in NCCL's order */
  CHECK(sizeof(cs_net_v9_t) == 160 && sizeof(cs_net_v10_t) == 160 && sizeof(cs_net_v11_t) == 176);
  CHECK(offsetof(cs_net_v11_t, init) == 8 && offsetof(cs_net_v11_t, listen) == 32);
  CHECK(offsetof(cs_net_v11_t, isend) == 80 && offsetof(cs_net_v11_t, irecv) == 88);
  CHECK(offsetof(cs_net_v11_t, test) == 104 && offsetof(cs_net_v11_t, closeListen) == 128);
  CHECK(offsetof(cs_net_v11_t, irecvConsumed) == 144 && offsetof(cs_net_v11_t, makeVDevice) == 152);
  CHECK(offsetof(cs_net_v11_t, finalize) == 160 && offsetof(cs_net_v11_t, setNetAttr) == 168);
  CHECK(offsetof(cs_net_v10_t, irecv) == 88 && offsetof(cs_net_v9_t, irecv) == 88);
  CHECK(offsetof(cs_net_v9_t, makeVDevice) == 152 && offsetof(cs_net_v10_t, makeVDevice) == 152);
  /* v12 (NCCL 2.30): vProps of 8 devices (36 bytes), railId/planeId after maxMultiRequestSize */
  CHECK(offsetof(struct cs_net_props_v12, maxP2pBytes) == 104 && offsetof(struct cs_net_props_v12, railId) == 124);
  CHECK(sizeof(struct cs_net_props_v12) == 128 && sizeof(cs_net_v12_t) == 176);
  CHECK(offsetof(cs_net_v12_t, makeVDevice) == 152 && offsetof(cs_net_v12_t, setNetAttr) == 168);
  CHECK(CS_NET_HANDLE_MAXSIZE == 128 && CS_NET_MAX_REQUESTS == 32);
  CHECK(CS_NET_ID_OFFSET == 112 && sizeof(struct cs_net_id) == 16);

  if (argc > 1) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (h) {
      void *a9, *a10, *a11, *a12;
      CHECK(sym_size(h, "ncclNetPlugin_v12", &a12) == sizeof(cs_net_v12_t));
      const cs_net_v12_t *t12 = a12;
      if (t12) CHECK(t12->init && t12->getProperties && t12->isend && t12->test && t12->finalize);
      CHECK(sym_size(h, "ncclNetPlugin_v11", &a11) == sizeof(cs_net_v11_t));
      CHECK(sym_size(h, "ncclNetPlugin_v10", &a10) == sizeof(cs_net_v10_t));
      CHECK(sym_size(h, "ncclNetPlugin_v9", &a9) == sizeof(cs_net_v9_t));
      const cs_net_v11_t *t11 = a11;
      const cs_net_v9_t *t9 = a9;
      if (t11) {
        CHECK(t11->name && t11->init && t11->devices && t11->getProperties && t11->listen && t11->connect &&
              t11->accept && t11->regMr && t11->deregMr && t11->isend && t11->irecv && t11->test &&
              t11->closeSend && t11->closeRecv && t11->closeListen && t11->finalize);
      }
      if (t9) CHECK(t9->init && t9->isend && t9->test && t9->closeListen);
    }
  }
  if (argc > 2) {
    void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    void *a;
    if (h) {
      CHECK(sym_size(h, "ncclNetPlugin_v11", &a) == sizeof(cs_net_v11_t));
      const cs_net_v11_t *t = a;
      if (t) CHECK(t->name && !strcmp(t->name, "simnet") && t->isend && t->irecv && t->test);
    }
  }
  printf("%s\n", fails ? "FAILED" : "net ABI: layouts of NCCL's net_v9/v10/v11.h (NVIDIA/nccl, LP64) ok");
  return fails ? 1 : 0;
}
