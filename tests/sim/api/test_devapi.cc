/* tests/sim/api/test_devapi.cc: a program built with NCCL's own device-API headers
 * (the nccl_device headers) and linked against the REAL libnccl calls the host functions of the
 * device API. On the simulator each must be found (no symbol lookup error, exit 127) and
 * the ones that need device state return ncclInvalidUsage with exactly one NCCL WARN line
 * each; ncclTeamWorld and ncclTeamRankToWorld compute what NCCL computes. */
#include <nccl.h>
#include <nccl_device/core.h>
#include <nccl_device/gin_barrier.h>
#include <nccl_device/ll_a2a.h>
#include <nccl_device/lsa_barrier.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

static int failures;
#define EXPECT(c) do { if (!(c)) { std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

int main()
{
  setenv("NCCL_DEBUG", "WARN", 1);
  ncclComm_t comms[2];
  if (ncclCommInitAll(comms, 2, nullptr) != ncclSuccess) { std::fprintf(stderr, "init failed\n"); return 1; }

  /* catch what NCCL prints (WARN lines go to stdout) */
  std::fflush(stdout);
  char path[] = "/tmp/collscope-devapi-XXXXXX";
  int fd = mkstemp(path), saved = dup(1);
  if (fd < 0 || saved < 0) { perror("mkstemp/dup"); return 1; }
  unlink(path);
  dup2(fd, 1);

  ncclDevCommRequirements_t reqs;
  std::memset(&reqs, 0, sizeof reqs);
  ncclDevComm_t *dc = (ncclDevComm_t *)std::calloc(1, 4096);   /* opaque here; room to spare */
  EXPECT(ncclDevCommCreate(comms[0], &reqs, dc) == ncclInvalidUsage);
  EXPECT(ncclDevCommDestroy(comms[0], dc) == ncclInvalidUsage);
  ncclTeam_t world = ncclTeamWorld(comms[1]);
  EXPECT(world.nRanks == 2 && world.rank == 1 && world.stride == 1);
  EXPECT(ncclTeamRankToWorld(comms[1], world, 0) == 0);
  ncclTeam_t lsa = ncclTeamLsa(comms[0]);
  EXPECT(lsa.nRanks == 0 && lsa.rank == 0 && lsa.stride == 0);
  ncclTeam_t rail = ncclTeamRail(comms[0]);
  EXPECT(rail.nRanks == 0 && rail.rank == 0 && rail.stride == 0);
  EXPECT(ncclTeamRankToLsa(comms[0], world, 1) == -1);
  ncclDevResourceRequirements_t rr;
  std::memset(&rr, 0, sizeof rr);
  EXPECT(ncclLsaBarrierCreateRequirement(world, 1, (ncclLsaBarrierHandle_t *)dc, &rr) == ncclInvalidUsage);
  EXPECT(ncclGinBarrierCreateRequirement(comms[0], world, 1, (ncclGinBarrierHandle_t *)dc, &rr) == ncclInvalidUsage);
  EXPECT(ncclLLA2ACreateRequirement(1, 1, (ncclLLA2AHandle_t *)dc, &rr) == ncclInvalidUsage);
  EXPECT(ncclLLA2ACalcSlots(10, 12) == 20);   /* ll_a2a.cc: maxElts * divUp(maxEltSize, 8) */
  EXPECT(std::strstr(ncclGetLastError(comms[0]), "device API is not simulated") != nullptr);

  std::fflush(stdout);
  dup2(saved, 1);
  char out[8192];
  ssize_t n = pread(fd, out, sizeof out - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  std::fputs(out, stdout);
  int warns = 0;
  for (const char *p = out; (p = std::strstr(p, "NCCL WARN")); p++) warns++;
  /* DevCommCreate, DevCommDestroy, TeamLsa, TeamRail, TeamRankToLsa, 3 requirements */
  EXPECT(warns == 8);
  EXPECT(std::strstr(out, "ncclDevCommCreate: the NCCL device API is not simulated") != nullptr);

  for (int i = 0; i < 2; i++) EXPECT(ncclCommDestroy(comms[i]) == ncclSuccess);
  std::free(dc);
  std::printf("%s (%d warn lines)\n", failures ? "FAIL" : "ok", warns);
  return failures ? 1 : 0;
}
