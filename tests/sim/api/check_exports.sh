#!/usr/bin/env bash
# tests/sim/api/check_exports.sh LIB...: every name a simulator library exports is API:
# cuda*/cu*/__cuda* (CUDA), nccl*/pncclX (NCCL), simcuda_* (the private interface between
# the sim libraries, simcuda.h), gethostname/uname (the simulated host, hostname.c),
# clock_gettime and the host sleeps and timed waits (the modeled clock, vclock.c), and
# the net plugin's ncclNet*/ncclCollNet* tables. Anything else (sn_*, sim_*, alloc_*...) is
# an internal that a program defining the same name would override.
set -u
status=0
for lib in "$@"; do
  names=$(nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u)
  if [ -z "$names" ]; then echo "FAIL $lib: exports nothing (nm failed?)"; status=1; continue; fi
  bad=$(printf '%s\n' "$names" | grep -Ev '^(cuda[A-Z_]|cu[A-Z]|__cuda[A-Z]|p?nccl[A-Z]|simcuda_|gethostname$|uname$|clock_gettime$|nanosleep$|usleep$|clock_nanosleep$|sleep$|poll$|ppoll$|__poll_chk$|__ppoll_chk$|select$|pselect$|pthread_cond_timedwait$|sem_timedwait$)' || true)
  if [ -n "$bad" ]; then
    echo "FAIL $(basename "$lib") exports non-API names:"; printf '  %s\n' $bad; status=1
  else
    echo "ok   $(basename "$lib"): $(printf '%s\n' "$names" | wc -l) names, all API"
  fi
done
exit $status
