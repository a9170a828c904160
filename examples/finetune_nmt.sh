#!/usr/bin/env bash
# Stage 3: fine-tune a MASS checkpoint on parallel data (task translation).
# PRETRAINED="" trains the same model from random initialisation.
# DRY_RUN=1 prints the fairseq-train command without running it.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

DATA_BIN=${DATA_BIN:-work/demo/data-bin}
PRETRAINED=${PRETRAINED-checkpoints/pretrain/checkpoint_best.pt}
SAVE_DIR=${SAVE_DIR:-checkpoints/ft-en-fr}
SRC=${SRC:-en}
TGT=${TGT:-fr}
ARCH=${ARCH:-transformer_mass}
MAX_TOKENS=${MAX_TOKENS:-4096}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-32768}
LR=${LR:-0.0005}
WARMUP=${WARMUP:-4000}
MAX_UPDATE=${MAX_UPDATE:-50000}
PATIENCE=${PATIENCE:-10}                   # validations without improvement
LOG_INTERVAL=${LOG_INTERVAL:-50}           # updates between progress lines
EXTRA_ARGS=${EXTRA_ARGS:-}

source "$SHELL_LIB/common.sh"
init_args=()
if [ -n "$PRETRAINED" ]; then
    init_args=(--finetune-from-model "$PRETRAINED")
fi

# shellcheck disable=SC2046,SC2086
run_cmd fairseq-train "$DATA_BIN" --user-dir "$USER_DIR" \
    --task translation -s "$SRC" -t "$TGT" --arch "$ARCH" "${init_args[@]}" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 1.0 \
    --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" \
    --max-tokens "$MAX_TOKENS" --max-update "$MAX_UPDATE" --patience "$PATIENCE" \
    --required-batch-size-multiple 1 --skip-invalid-size-inputs-valid-test \
    --save-dir "$SAVE_DIR" --no-epoch-checkpoints --log-format simple \
    --log-interval "$LOG_INTERVAL" $(device_args) $EXTRA_ARGS
