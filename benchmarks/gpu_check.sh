#!/usr/bin/env bash
# The GPU acceptance check: every GPU path of the plugin on one GPU, each step
# under its own time limit, a row in OUT_DIR/summary.md as each step ends.
#   bash benchmarks/gpu_check.sh [OUT_DIR]       (from the repository root)
# The default steps fit one device call: about 5.5 minutes expected and 7.8 at
# most, every step at its limit (8 minutes is the budget: a call runs at most
# 10, a session's device time is 15 with the machine's start), on a machine
# where a new Python with fairseq takes 10 s to start:
#   tests       one pytest -m gpu over every test file: fp16/bf16 steps through
#               fairseq's Trainer and their loss curves against fp32, a checkpoint
#               loaded into a model on the GPU, online back-translation on pinned
#               batches, an fp16 run resumed with its loss scale, the GPU fast
#               paths against fairseq's; run beside the quickstart (phase 1)
#   quickstart  examples/quickstart.sh with NUM_GPUS=1 (fp16), 200 + 200 updates:
#               pre-training, fine-tuning from it, decoding and BLEU
#   hub         the hub interface on CUDA in float32 and float16 against the CPU
#   base_fp16   the pretrain_base preset (fairseq-hydra-train), fp16, 20 updates
#   base_bf16   the same preset in bf16 (common.bf16=true)
#   ranks_fp16  two ranks on the GPU (torchrun, gloo) against one rank with
#               --update-freq 2: loss curves and words/s; ranks_bf16 the same in bf16
#   online      projects/unsupervised/online_bt.sh, fp16, from the quickstart's
#               pre-training, 100 updates
# Not in the default (with it the limits pass the budget), in a call of its own:
#   benchmark   benchmarks/benchmark.py --device cuda: steady-state throughput and
#               MFU, BENCH_ARGS its options (default: the base model's table);
#               STEPS=benchmark bash benchmarks/gpu_check.sh OUT_DIR2 (about 2.7
#               minutes expected, 3.6 at most)
# STEPS="hub ranks_fp16" runs a subset (in the table's order; the steps after the
# quickstart read its files under WORK_DIR), STEPS=all all ten, benchmark and
# speed (STEPS=speed: the fast paths, docs/scale.md) included (over the budget).
# hub, base_fp16 and base_bf16 run in forks of one Python that imported torch,
# fairseq and the plugin while phase 1 ran: no new Python's start for them.
# Each step's output goes to the console and, as it comes, to its log in
# OUT_DIR; a step past its limit is ended (its process group) and reported as
# cut, and the next one starts. OUT_DIR holds at most 8 files (summary.md,
# tests.log, quickstart.log, steps.log for hub, base_* and ranks_*, online.log;
# benchmark.log and benchmark.jsonl); the work files go to WORK_DIR. The steps'
# limits, their expected durations and the basis of each are in
# benchmarks/gpu_check.py; DRY_RUN=1 lists them (any machine) and writes
# summary.md with every step "not run (dry run)". Without a CUDA GPU a real
# run stops with exit code 3; it exits 1 if a step failed or was cut.
set -euo pipefail
source "$(python -m mass_tools.shell)/usage.sh"  # --help

OUT_DIR=${1:-work/gpu-check}
STEPS=${STEPS:-default}
DRY_RUN=${DRY_RUN:-0}
WORK_DIR=${WORK_DIR:-}          # empty: OUT_DIR.work, beside OUT_DIR
MODEL_ARGS=${MODEL_ARGS:-}      # empty: the quickstart's model (2+2 layers, 128 dimensions)
BENCH_ARGS=${BENCH_ARGS:-}      # empty: --tables base --base-size 65536 --base-precisions fp16

OUT_DIR=$(realpath -m "$OUT_DIR")  # the paths as given here, before the cd below
[ -z "$WORK_DIR" ] || WORK_DIR=$(realpath -m "$WORK_DIR")
args=(--out "$OUT_DIR" --steps "$STEPS" --work-dir "$WORK_DIR" --model-args "$MODEL_ARGS"
      --bench-args "$BENCH_ARGS")
if [ "$DRY_RUN" = 1 ]; then
    args+=(--dry-run)
fi
cd "$(dirname "$0")/.."  # python -m benchmarks.* runs from the repository root
exec python -u -m benchmarks.gpu_check "${args[@]}"
