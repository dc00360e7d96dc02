#!/bin/bash
# tests/slurm/slurm_rank.sh: runs one Slurm task of a simulated job: maps what srun gives a
# task (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, job and step id) onto what `collscope run`
# gives a rank (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT) and puts the simulator
# (CS_TEST_SIM_DIR) first on LD_LIBRARY_PATH, then execs the command. Rank 0 prints the
# job id, step id and LD_PRELOAD it got, for the test to check.
set -eu
export RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID
export LOCAL_WORLD_SIZE=$SLURM_NTASKS GROUP_RANK=0 GROUP_WORLD_SIZE=1
export MASTER_ADDR=127.0.0.1
# one port per step, agreed by every task without talking: from the job and step ids
export MASTER_PORT=$(( 20000 + (SLURM_JOB_ID * 8 + ${SLURM_STEP_ID:-0} * 131) % 30000 ))
export LD_LIBRARY_PATH=$CS_TEST_SIM_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ "$RANK" = 0 ]; then
  echo "slurm_rank: job=$SLURM_JOB_ID step=${SLURM_STEP_ID:-} preload=[${LD_PRELOAD:-}] dir=[${COLLSCOPE_DIR:-}]"
fi
exec "$@"
