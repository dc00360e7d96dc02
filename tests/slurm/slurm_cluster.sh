# tests/slurm/slurm_cluster.sh: a throw-away Slurm for the real-Slurm tests, sourced (bash).
# cs_cluster_start T PLUGSTACK NODE...: in directory T (made by the caller, 0755), a munged
# with a key of its own and its own socket, a slurmctld (-i) and one slurmd per NODE (2 CPUs
# each, own ports, all on 127.0.0.1) from a generated slurm.conf (plus the lines of
# CS_EXTRA_CONF when set, e.g. an Epilog=); exports SLURM_CONF and
# PATH (with /usr/sbin); the daemons' pids go to the array cs_pids, which cs_cluster_stop
# ends (TERM, then KILL, by pid only). Returns non-zero, with the daemons' logs on stderr,
# when they do not come up.
cs_pids=()
cs_cluster_stop() {
  local p i alive f
  for p in "${cs_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for i in $(seq 50); do
    alive=0
    for p in "${cs_pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${cs_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for f in "$CS_T"/spool/*/*.pid "$CS_T"/spool/*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
  return 0
}
cs_cluster_logs() {
  local l
  for l in "$CS_T"/*.log "$CS_T"/*.out; do
    [ -f "$l" ] && { echo "---- $l (tail)"; tail -n 20 "$l"; }
  done >&2
}
cs_cluster_start() {
  CS_T=$1
  local plugstack=$2 i n st up
  shift 2
  local nodes=("$@")
  export PATH=$PATH:/usr/sbin
  head -c 1024 /dev/urandom > "$CS_T/munge.key"
  chmod 0400 "$CS_T/munge.key"
  mkdir -m 0755 "$CS_T/munge"
  munged --foreground --force --key-file="$CS_T/munge.key" --socket="$CS_T/munge/sock" \
    --pid-file="$CS_T/munge/pid" --log-file="$CS_T/munged.log" --seed-file="$CS_T/munge/seed" >"$CS_T/munged.out" 2>&1 &
  cs_pids+=($!)
  local ports
  read -r -a ports < <(python3 -c '
import socket, sys
s=[socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1",0))
print(*[x.getsockname()[1] for x in s])' $((${#nodes[@]} + 1)))
  mkdir -p "$CS_T/state" "$CS_T/spool"
  {
    cat <<CONF
ClusterName=cstest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=${ports[0]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$CS_T/munge/sock
StateSaveLocation=$CS_T/state
SlurmdSpoolDir=$CS_T/spool/%n
SlurmctldPidFile=$CS_T/slurmctld.pid
SlurmdPidFile=$CS_T/spool/slurmd.%n.pid
SlurmctldLogFile=$CS_T/slurmctld.log
SlurmdLogFile=$CS_T/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdTimeout=30
PlugStackConfig=$plugstack
CONF
    for i in "${!nodes[@]}"; do
      echo "NodeName=${nodes[$i]} NodeAddr=127.0.0.1 NodeHostname=$(hostname -s) Port=${ports[$((i + 1))]} CPUs=2 State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=$(IFS=,; echo "${nodes[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE"
    if [ -n "${CS_EXTRA_CONF:-}" ]; then echo "$CS_EXTRA_CONF"; fi
  } > "$CS_T/slurm.conf"
  export SLURM_CONF=$CS_T/slurm.conf
  for i in $(seq 50); do [ -S "$CS_T/munge/sock" ] && break; sleep 0.1; done
  [ -S "$CS_T/munge/sock" ] || { cs_cluster_logs; echo "munged did not start" >&2; return 1; }
  slurmctld -D -i -f "$CS_T/slurm.conf" >"$CS_T/slurmctld.out" 2>&1 &
  cs_pids+=($!)
  for n in "${nodes[@]}"; do
    mkdir -p "$CS_T/spool/$n"
    slurmd -D -N "$n" -f "$CS_T/slurm.conf" >"$CS_T/slurmd.$n.out" 2>&1 &
    cs_pids+=($!)
  done
  up=0
  for i in $(seq 150); do
    st=$(sinfo -h -o %T 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$st" = "idle " ] && { up=1; break; }
    sleep 0.2
  done
  [ $up = 1 ] || { cs_cluster_logs; echo "slurmctld/slurmd did not come up (node states '$st')" >&2; return 1; }
}
