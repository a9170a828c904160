#!/usr/bin/env bash
# The paper's unsupervised NMT from start to end (sections 4.1 and 4.2):
# cross-lingual MASS pre-training on the monolingual text of L1 and L2
# (pretrain.sh), then back-translation from its checkpoint, online as the
# paper (BT=online: unsup_online_bt.sh), offline in rounds
# (BT=offline: unsup_offline_bt.sh) or both, each ending with detokenized
# test BLEU in both directions (WORK_DIR/BT/results*.tsv). The variables of
# those recipes (SCALE, MODEL_ARGS, ROUNDS, LAUNCHER for the pre-training,
# ...) pass through the environment. Interrupted? Run the same command
# again: each recipe resumes where it stopped.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help
source "$(dirname "$0")/settings.sh"  # SCALE, run_cmd, ...

DATA_BIN=${DATA_BIN:?set DATA_BIN to mass-binarize output: dict.txt, train.L1/train.L2, valid.L1/valid.L2 and the valid/test pairs}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
L1=${L1:-en}
L2=${L2:-fr}
WORK_DIR=${WORK_DIR:-work/paper-unsup-$SCALE}
BT=${BT:-online}                         # online (the paper's), offline, or "online offline"

for bt in $BT; do
    if [ "$bt" != online ] && [ "$bt" != offline ]; then
        echo "error: BT=$BT: choose online, offline or \"online offline\"" >&2
        exit 1
    fi
done
progress "pre-training on $L1 and $L2, SCALE=$SCALE"
run_recipe env DATA_BIN="$DATA_BIN" LANGS="$L1,$L2" SAVE_DIR="$WORK_DIR/pretrain" \
    bash "$PAPER_DIR/pretrain.sh"
for bt in $BT; do
    progress "$bt back-translation"
    run_recipe env DATA_BIN="$DATA_BIN" REFERENCE_PREFIX="$REFERENCE_PREFIX" L1="$L1" L2="$L2" \
        PRETRAINED="$WORK_DIR/pretrain/checkpoint_best.pt" WORK_DIR="$WORK_DIR/$bt" \
        bash "$PAPER_DIR/unsup_${bt}_bt.sh"
done
finished "finished: $WORK_DIR"
