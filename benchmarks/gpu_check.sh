#!/usr/bin/env bash
# The GPU acceptance check: every GPU path of the plugin on one GPU, each step
# under its own time limit (9.5 minutes in all), one summary file.
#   bash benchmarks/gpu_check.sh [OUT_DIR]       (from the repository root)
# OUT_DIR (default work/gpu-check) gets summary.md (a row per step: passed,
# failed or timed out, its time and what it measured), logs/STEP.log and the
# work files. Steps, in order (STEPS="..." runs a subset, in this order):
#   tests      pytest -m gpu: fp16/bf16 steps through fairseq's Trainer and
#              their loss curves against fp32, a checkpoint loaded into a model on
#              the GPU, online back-translation on pinned batches, an fp16 run
#              resumed with its loss scale, the GPU fast paths against fairseq's
#   quickstart examples/quickstart.sh with NUM_GPUS=1 (fp16) at a short budget:
#              pre-training, fine-tuning from it, decoding and BLEU
#   hub        the hub interface on CUDA in float32 and float16 against the CPU
#   ranks      two ranks on the GPU (torchrun, gloo) against one rank with
#              --update-freq 2, fp16 then bf16: loss curves and words/s
#   online     projects/unsupervised/online_bt.sh, fp16, from the quickstart's pre-training
#   base_fp16  the pretrain_base preset (fairseq-hydra-train), fp16, 20 updates
#   base_bf16  the same preset in bf16 (common.bf16=true)
#   benchmark  benchmarks/benchmark.py --device cuda: steady-state throughput and MFU
# BENCH_ARGS replaces the benchmark's options (default: "--tables base
# --base-size 65536 --base-precisions fp16", two configurations: the base model's
# masked_s2s against denoising). The limits come from the H200's times
# (docs/results/gpu.md, run 5), where each Python process took about 10 s to start.
# DRY_RUN=1 prints each step's command instead of running it (any machine).
set -uo pipefail
source "$(python -m mass_tools.shell)/usage.sh"  # --help

OUT=${1:-work/gpu-check}
STEPS=${STEPS:-tests quickstart hub ranks online base_fp16 base_bf16 benchmark}
DRY_RUN=${DRY_RUN:-0}
# the quickstart's model, a little larger batch; the online step reuses it
MODEL_ARGS=${MODEL_ARGS:-"--encoder-layers 2 --decoder-layers 2 \
    --encoder-embed-dim 128 --decoder-embed-dim 128 \
    --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 \
    --encoder-attention-heads 4 --decoder-attention-heads 4 --num-workers 0"}
WORK=$OUT/work
QUICK=$WORK/quickstart
SUMMARY=$OUT/summary.md

mkdir -p "$OUT/logs" "$WORK"
if [ "$DRY_RUN" != 1 ] && ! python -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
    echo "error: no CUDA GPU here (torch.cuda.is_available() is False): this check" \
         "is for a GPU machine; DRY_RUN=1 lists its steps" >&2
    exit 3
fi

gpu=$(python -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "none")' 2>/dev/null)
{
    echo "# GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "GPU: $gpu; python $(python -c 'import platform; print(platform.python_version())');" \
         "torch $(python -c 'import torch; print(torch.__version__)' 2>/dev/null)"
    echo
    echo "| step | result | time | limit | measured |"
    echo "| --- | --- | ---: | ---: | --- |"
} > "$SUMMARY"

# what a step's log says it measured, for the summary
measured() {
    local log=$OUT/logs/$1.log
    case $1 in
        tests) grep -oE '::[^ ]+ (FAILED|ERROR)' "$log" | tr '\n' ';'
               grep -E '[0-9]+ (passed|failed|skipped|errors?)' "$log" | tail -1 ;;
        quickstart) grep -oE 'BLEU\|[^ ]* = [0-9.]+' "$log" | tail -1 ;;
        hub) grep -E ' float(32|16): ' "$log" | grep -v '^cpu ' | tr '\n' ';' ;;
        ranks) grep -E '^cuda (fp16|bf16): ' "$log" | tr '\n' ';' ;;
        online) grep -E '^(en-fr|fr-en) ' "$log" | tr -s ' ' | tr '\n' ';' ;;
        base_*) grep -oE '(num_updates|ups|wps)[= ][0-9.]+|done training in [0-9.]+ s' "$log" \
                    | tail -4 | tr '\n' ' ' ;;
        benchmark) sed -n '/^Targets/,/^$/p' "$log" | tail -n +2 | sed 's/^ *//' | tr '\n' ';' ;;
    esac
}

# run_step NAME LIMIT_SECONDS COMMAND...: the command under its time limit,
# its output in logs/NAME.log, a row in the summary
run_step() {
    local name=$1 limit=$2 start rc result
    shift 2
    case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
    if [ "$DRY_RUN" = 1 ]; then
        printf '%s (%s s): %s\n' "$name" "$limit" "$*"
        echo "| $name | not run (dry run) | | $limit s | |" >> "$SUMMARY"
        return 0
    fi
    echo "== $name (at most $limit s)"
    start=$SECONDS
    timeout --kill-after=5 "$limit" "$@" > "$OUT/logs/$name.log" 2>&1
    rc=$?
    case $rc in
        0) result=passed ;;
        124|137) result="timed out" ;;
        *) result="failed (exit $rc)" ;;
    esac
    echo "   $result in $((SECONDS - start)) s"
    echo "| $name | $result | $((SECONDS - start)) s | $limit s | $(measured "$name" | tr '|' '/') |" \
        >> "$SUMMARY"
}

# -v: a test's name and result as it ends, so that a log cut by the limit says which failed
run_step tests 75 python -m pytest -m gpu -o addopts= -v -p no:cacheprovider \
    tests/test_gpu.py tests/test_gpu_kernels.py

run_step quickstart 90 env NUM_GPUS=1 WORK_DIR="$QUICK" PRETRAIN_UPDATES=200 \
    FINETUNE_UPDATES=200 MODEL_ARGS="$MODEL_ARGS" bash examples/quickstart.sh

run_step hub 25 python benchmarks/hub_devices.py --work-dir "$QUICK" \
    --output "$OUT/logs/hub.json"

ranks=(python benchmarks/two_ranks.py --data-bin "$QUICK/data-bin" --device cuda --updates 24)
run_step ranks 90 bash -c '"$@" --precision fp16 && "$@" --precision bf16' ranks "${ranks[@]}"

run_step online 100 env NUM_GPUS=1 DATA_BIN="$QUICK/data-bin" REFERENCE_PREFIX=examples/data/test \
    PRETRAINED="$QUICK/checkpoints/pretrain/checkpoint_best.pt" WORK_DIR="$WORK/online" \
    MODEL_ARGS="$MODEL_ARGS" MASK_RATIO=1.0 MAX_UPDATE=100 VALIDATE_EVERY=100 \
    MAX_TOKENS=2048 LR=0.0005 WARMUP=100 BEAM=1 LOG_INTERVAL=50 \
    bash projects/unsupervised/online_bt.sh

# the pretrain_base preset on the quickstart's data, 20 updates, no checkpoint
# written (4 s each for this model on the H200)
hydra=(fairseq-hydra-train --config-dir mass_plugin/config --config-name pretrain_base
       common.user_dir="$PWD/mass_plugin" task.data="$QUICK/data-bin" "task.langs='en,fr'"
       optimization.max_update=20 common.log_interval=10 dataset.num_workers=2
       checkpoint.no_save=true)
run_step base_fp16 30 "${hydra[@]}" checkpoint.save_dir="$WORK/base-fp16"
run_step base_bf16 30 "${hydra[@]}" checkpoint.save_dir="$WORK/base-bf16" \
    common.fp16=false common.bf16=true

# the base model at 65,536 tokens per step (MFU; masked_s2s against denoising);
# benchmark.py alone measures more (the 512-dimension model, --variant rows)
# shellcheck disable=SC2086
run_step benchmark 130 python benchmarks/benchmark.py --device cuda \
    --workdir "$WORK/benchmark" --output "$OUT/benchmark.jsonl" \
    ${BENCH_ARGS:---tables base --base-size 65536 --base-precisions fp16}

echo
cat "$SUMMARY"
! grep -qE '\| (failed|timed out)' "$SUMMARY"
