#!/usr/bin/env bash
# Stage 2: MASS pre-training (task masked_s2s) on the monolingual data of
# DATA_BIN. Defaults are GPU-sized; quickstart.sh shows CPU-sized overrides.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

DATA_BIN=${DATA_BIN:-work/demo/data-bin}
SAVE_DIR=${SAVE_DIR:-checkpoints/pretrain}
LANGS=${LANGS:-en,fr}
ARCH=${ARCH:-transformer_mass}
MASK_RATIO=${MASK_RATIO:-0.5}
MAX_TOKENS=${MAX_TOKENS:-4096}             # per GPU (or CPU process) and step
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-131072}  # effective batch, any GPU count
LR=${LR:-0.0005}
WARMUP=${WARMUP:-4000}
MAX_UPDATE=${MAX_UPDATE:-100000}
VALIDATE_EVERY=${VALIDATE_EVERY:-2000}     # updates
EXTRA_ARGS=${EXTRA_ARGS:-}                 # anything else for fairseq-train

source "$SHELL_LIB/common.sh"
IFS=, read -r -a langs <<< "$LANGS"
valid_subsets=$(printf 'valid.%s,' "${langs[@]}")

# shellcheck disable=SC2046,SC2086
fairseq-train "$DATA_BIN" --user-dir "$USER_DIR" \
    --task masked_s2s --langs "$LANGS" --valid-subset "${valid_subsets%,}" \
    --arch "$ARCH" --criterion masked_s2s_loss --mask-ratio "$MASK_RATIO" \
    --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 1.0 \
    --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" \
    --max-tokens "$MAX_TOKENS" --max-update "$MAX_UPDATE" \
    --validate-interval-updates "$VALIDATE_EVERY" --save-interval-updates "$VALIDATE_EVERY" \
    --keep-interval-updates 2 --skip-invalid-size-inputs-valid-test \
    --save-dir "$SAVE_DIR" --no-epoch-checkpoints --log-format simple --log-interval 50 \
    $(device_args) $EXTRA_ARGS
