/* tests/apps/bootstrap.h: the tiny TCP store the test jobs exchange NCCL unique ids
 * over, like torch.distributed's TCPStore at MASTER_ADDR:MASTER_PORT.
 *
 * Rank 0 publishes values under keys and serves a known number of requests; every
 * other rank fetches each key it needs once. Every blocking step is bounded: clients
 * retry connect() for up to BS_CONNECT_S, every send/recv/accept waits at most
 * BS_IO_S, so a dead peer makes the job fail instead of hanging forever.
 *
 * Wire format: request = u32 key length (network order) + key bytes;
 * reply = u32 value length + value bytes (length 0: unknown key). */
#ifndef COLLSCOPE_APPS_BOOTSTRAP_H
#define COLLSCOPE_APPS_BOOTSTRAP_H
#include <stddef.h>

#define BS_CONNECT_S 30 /* clients: how long to retry connecting */
#define BS_IO_S 60      /* server: how long to wait for all requests; clients: for a reply */
#define BS_MAX_VALUE 4096

struct bs_kv {
  const char *key;
  const void *value;
  size_t len;
};

/* Rank 0: listen on MASTER_ADDR:MASTER_PORT and answer exactly `requests` requests
 * for the given keys, then close. Returns 0, or -1 with a message on stderr. */
int bs_serve(const struct bs_kv *kv, size_t nkv, int requests);

/* Other ranks: fetch key's value (exactly len bytes) from rank 0's store. */
int bs_get(const char *key, void *value, size_t len);

#endif
