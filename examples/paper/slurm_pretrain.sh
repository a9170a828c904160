#!/usr/bin/env bash
# The paper's MASS pre-training (examples/paper/pretrain.sh) on several
# machines under SLURM: one task per node, each running torchrun with one
# process per GPU (pretrain.sh's LAUNCHER); the ranks meet at the job's
# first node, and --update-freq counts every GPU of every node. Submit from
# the repository root (the job starts in the submit directory) with
# pretrain.sh's variables in the environment, on a file system every node
# sees; the #SBATCH lines below are defaults, sbatch's options override them:
#   DATA_BIN=/shared/data-bin SAVE_DIR=/shared/mass-pretrain \
#     sbatch --nodes 2 --gpus-per-node 8 examples/paper/slurm_pretrain.sh
# 2 nodes x 8 GPUs x 3000 tokens make 48,000 tokens per update, twice the
# paper's 24,000 (8 GPUs): add MAX_TOKENS=1500 to keep the paper's batch.
# Resubmit the same job after a time limit: training resumes from
# SAVE_DIR/checkpoint_last.pt.

#SBATCH --job-name mass-pretrain
#SBATCH --nodes 2
#SBATCH --ntasks-per-node 1
#SBATCH --gpus-per-node 8
#SBATCH --cpus-per-task 32
#SBATCH --time 3-00:00:00
#SBATCH --output slurm-%x-%j.out
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh
source "$SHELL_LIB/usage.sh"  # --help

GPUS_PER_NODE=${GPUS_PER_NODE:-${SLURM_GPUS_ON_NODE:-8}}  # processes per node
MASTER_PORT=${MASTER_PORT:-29500}
RECIPE=${RECIPE:-examples/paper/pretrain.sh}

if [ -z "${SLURM_JOB_NODELIST:-}" ]; then
    echo "error: not in a SLURM job: submit it with sbatch examples/paper/slurm_pretrain.sh" \
         "(or run $RECIPE with LAUNCHER on each machine)" >&2
    exit 1
fi
if [ ! -f "$RECIPE" ]; then
    echo "error: RECIPE=$RECIPE: no such file (submit from the repository root)" >&2
    exit 1
fi
# the first host: read the whole list, then take its first line (a pipe into
# `head` would fail under pipefail when scontrol writes on after head exits)
HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
MASTER_ADDR=${HOSTS%%$'\n'*}
if [ -z "$MASTER_ADDR" ]; then
    echo "error: scontrol show hostnames \"$SLURM_JOB_NODELIST\" printed no host" >&2
    exit 1
fi
export GPUS_PER_NODE MASTER_ADDR MASTER_PORT RECIPE
echo "== $SLURM_NNODES nodes x $GPUS_PER_NODE processes, rendezvous at $MASTER_ADDR:$MASTER_PORT"
# one task per node; SLURM_NODEID is that node's rank
# shellcheck disable=SC2016
srun --ntasks-per-node 1 bash -c 'LAUNCHER="torchrun --nnodes $SLURM_NNODES
    --node_rank $SLURM_NODEID --nproc_per_node $GPUS_PER_NODE --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT" exec bash "$RECIPE"'
