/* tests/integration/uid_file.h: the integration programs' unique-id exchange through a file
 * (no launcher bootstrap): rank 0 makes the id and writes it whole (a temporary, renamed),
 * the other ranks wait for it (at most 60 s). Exits 2 when it cannot. */
#ifndef COLLSCOPE_TESTS_UID_FILE_H
#define COLLSCOPE_TESTS_UID_FILE_H
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void uid_file_share(ncclUniqueId *id, const char *path, int rank) {
  if (rank == 0) {
    char tmp[4200];
    if (ncclGetUniqueId(id) != ncclSuccess) exit(2);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(id, sizeof(*id), 1, f) != 1) exit(2);
    fclose(f);
    if (rename(tmp, path)) exit(2);
    return;
  }
  for (int i = 0; i < 60000; i++) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t n = fread(id, sizeof(*id), 1, f);
      fclose(f);
      if (n == 1) return;
    }
    usleep(1000);
  }
  fprintf(stderr, "rank %d: no unique id at %s\n", rank, path);
  exit(2);
}
#endif
