#!/bin/bash
# integrations/slurm/collscope-epilog.sh: the node's clean-up of collscope's stats rings after
# a job. Set in slurm.conf as Epilog=/path/collscope-epilog.sh (or call it from the site's
# Epilog). slurmd runs it as root on every node of the job once the job has ended, with
# SLURM_JOB_ID and SLURM_JOB_UID set. The rings of the job's processes that were killed
# (SIGKILL, the OOM killer, a node's time limit) stay in /dev/shm; this salvages each one into
# a dump owned by the job's user and removes it:
#   collscope salvage --clean --job $SLURM_JOB_ID --uid $SLURM_JOB_UID -o DIR
# Only that user's rings of that job, only those whose writer is dead (docs/rings.md).
# Site settings (edit here or set in slurmd's environment):
#   COLLSCOPE_EP_BIN   the collscope CLI (default below)
#   COLLSCOPE_EP_OUT   where the salvaged dumps go, %j job id, %u uid
#                      (default /var/tmp/collscope-salvage/%j; the parent is made 0755 by root,
#                      the job's directory 0700 by salvage and given to the user)
#   COLLSCOPE_SHM_DIR  where the rings are (default /dev/shm)
#   COLLSCOPE_EP_LOG   syslog (default; stderr when logger is missing) or stderr
# It always exits 0 (a failing Epilog drains the node); what it did is logged: one line per
# salvaged ring and one summary line.
bin=${COLLSCOPE_EP_BIN:-@CS_BINDIR@/collscope}
out=${COLLSCOPE_EP_OUT:-/var/tmp/collscope-salvage/%j}
job=${SLURM_JOB_ID:-}
uid=${SLURM_JOB_UID:-}

say() {
  if [ "${COLLSCOPE_EP_LOG:-syslog}" != stderr ] && command -v logger >/dev/null 2>&1; then logger -t collscope-epilog -- "$@"; else echo "collscope-epilog: $*" >&2; fi
}
[[ $job =~ ^[0-9]{1,20}$ ]] || { say "SLURM_JOB_ID '${job:0:32}' is not a job id; nothing done"; exit 0; }
[[ $uid =~ ^[0-9]{1,10}$ ]] || { say "SLURM_JOB_UID '${uid:0:32}' is not a uid; nothing done"; exit 0; }
[ -x "$bin" ] || { say "$bin is not executable; nothing done"; exit 0; }
out=${out//%j/$job}
out=${out//%u/$uid}
case $out in /*) ;; *) say "COLLSCOPE_EP_OUT must be an absolute path ($out); nothing done"; exit 0 ;; esac
parent=${out%/*}
[ -n "$parent" ] && { [ -d "$parent" ] || mkdir -p -m 0755 -- "$parent"; }
args=(salvage --clean --job "$job" --uid "$uid" -o "$out")
[ -n "${COLLSCOPE_SHM_DIR:-}" ] && args+=(--shm-dir "$COLLSCOPE_SHM_DIR")
"$bin" "${args[@]}" 2>&1 | while IFS= read -r line; do say "job $job: $line"; done
exit 0
