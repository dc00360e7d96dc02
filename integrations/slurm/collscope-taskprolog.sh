#!/bin/bash
# integrations/slurm/collscope-taskprolog.sh: collscope for sites that do not load SPANK
# plugins. Set in slurm.conf as TaskProlog=/path/collscope-taskprolog.sh (or call it from the
# site's TaskProlog). Slurm runs it as the job's user before each task and applies the
# `export NAME=VALUE` lines it prints to the task's environment.
#
# A job asks with COLLSCOPE_SLURM=on or COLLSCOPE_SLURM=OPTS (the keys of `srun --collscope`:
# sdc=, timing=, dir=, topology=, hang=, ring=, log=, online=, record=, sdc_action=, sdc_min_bytes=),
# or off; each key at most once, no empty item. Site settings (edit here or set in the slurmd environment):
#   COLLSCOPE_TP_SHIM      libcollscope.so to preload (default below)
#   COLLSCOPE_TP_DIR       job directory template, %j job id, %u user, %s step (default collscope-%j)
#   COLLSCOPE_TP_DEFAULT   on: every job unless COLLSCOPE_SLURM=off
# Any problem prints one line on stderr and no exports: the task runs without collscope.
shim=${COLLSCOPE_TP_SHIM:-@CS_SPANK_DEFAULT_SHIM@}
tmpl=${COLLSCOPE_TP_DIR:-collscope-%j}
want=${COLLSCOPE_SLURM:-}
[ -z "$want" ] && [ "${COLLSCOPE_TP_DEFAULT:-off}" = on ] && want=on
[ -z "$want" ] || [ "$want" = off ] && exit 0
case "${SLURM_STEP_ID:-}" in ""|batch|extern|interactive|4294967291|4294967292|4294967290) exit 0 ;; esac

say() { [ "${SLURM_LOCALID:-0}" = 0 ] && echo "collscope: $*; the job runs without collscope" >&2; exit 0; }

vars=()
# on by the site's default (the job did not ask): the always-on recording mode, bounded disk
# (docs/always-on.md); a job's record= comes later and wins
[ -z "${COLLSCOPE_SLURM:-}" ] && vars+=("COLLSCOPE_RECORD=summary")
seen=,
if [ "$want" != on ]; then
  case ",$want," in *,,*) say "COLLSCOPE_SLURM: an empty item in the option list" ;; esac
  IFS=, read -r -a items <<< "$want"
  for it in "${items[@]}"; do
    k=${it%%=*} v=${it#*=}
    [ "$k" = "$it" ] && say "COLLSCOPE_SLURM: '${it:0:64}' is not KEY=VALUE"
    case $seen in *,"$k",*) say "COLLSCOPE_SLURM: ${k:0:64} is given twice (each key at most once)" ;; esac
    seen=$seen$k,
    case "$k:$v" in
      sdc:off|sdc:all) vars+=("COLLSCOPE_SDC=$v") ;;
      sdc:sample:[1-9]*) [[ ${v#sample:} =~ ^[0-9]+$ ]] || say "bad value '$v' for sdc"; vars+=("COLLSCOPE_SDC=$v") ;;
      timing:auto|timing:events|timing:on|timing:1|timing:profiler|timing:off|timing:0) vars+=("COLLSCOPE_TIMING=$v") ;;
      log:quiet|log:warn|log:info|log:debug) vars+=("COLLSCOPE_LOG=$v") ;;
      sdc_action:log|sdc_action:abort) vars+=("COLLSCOPE_SDC_ACTION=$v") ;;
      online:0|online:1) vars+=("COLLSCOPE_ONLINE=$v") ;;
      record:full|record:summary) vars+=("COLLSCOPE_RECORD=$v") ;;
      hang:*|ring:*|sdc_min_bytes:*)
        [[ $v =~ ^[0-9]{1,13}$ ]] || say "bad value '$v' for $k"
        case $k in hang) vars+=("COLLSCOPE_HANG_TIMEOUT=$v") ;; ring) vars+=("COLLSCOPE_RING=$v") ;;
                   *) vars+=("COLLSCOPE_SDC_MIN_BYTES=$v") ;; esac ;;
      topology:?*) vars+=("COLLSCOPE_TOPOLOGY=$v") ;;
      dir:?*) tmpl=$v ;;
      *) say "COLLSCOPE_SLURM: unknown key or bad value '${it:0:64}'" ;;
    esac
  done
fi

# %j %u %s %%: each substitution one path component
user=$(id -un)
for part in "$SLURM_JOB_ID" "$user" "${SLURM_STEP_ID:-0}"; do
  case "$part" in ""|.|..|*/*) say "cannot expand the job directory" ;; esac
done
dir=${tmpl//%%/$'\x01'}
dir=${dir//%j/$SLURM_JOB_ID}; dir=${dir//%u/$user}; dir=${dir//%s/${SLURM_STEP_ID:-0}}
case "$dir" in *%*) say "bad job directory template '$tmpl'" ;; esac
dir=${dir//$'\x01'/%}
case "$dir" in *..*) say "'..' in the job directory" ;; esac
[ -r "$shim" ] || say "cannot read the shim $shim"

# no component of the path may be a symbolic link (checked before and after making it)
check_path() {
  local p="" c rest=$1
  [ "${1:0:1}" = / ] || p=.
  IFS=/ read -r -a comps <<< "$rest"
  for c in "${comps[@]}"; do
    [ -z "$c" ] && continue
    p=$p/$c
    [ -L "$p" ] && say "$dir: '$c' is a symbolic link"
  done
}
check_path "$dir"
(umask 077; mkdir -p -- "$dir" 2>/dev/null) || say "cannot make $dir"
check_path "$dir"
[ -d "$dir" ] && [ -O "$dir" ] || say "$dir exists and is not the job's user's directory"
chmod 0700 -- "$dir" 2>/dev/null || say "cannot set the mode of $dir"

new=$shim
IFS=': ' read -r -a pre <<< "${LD_PRELOAD:-}"
for p in "${pre[@]}"; do [ -n "$p" ] && [ "$p" != "$shim" ] && new=$new:$p; done
echo "export COLLSCOPE_DIR=$dir"
echo "export COLLSCOPE_JOB_ID=$SLURM_JOB_ID"
for v in "${vars[@]}"; do echo "export $v"; done
echo "export LD_PRELOAD=$new"
