#!/usr/bin/env bash
# The whole path on the bundled demo data, sized for a CPU: one sentencepiece
# model over English and French, MASS pre-training, en->fr fine-tuning,
# translation of the test set, sacreBLEU. About 16 minutes on 2 idle CPU cores
# (timed with the previous embedding style).
#   bash examples/quickstart.sh            (from anywhere: the data is beside it)
# PRETRAIN_UPDATES=0 is the control: the same fine-tuning and translation from
# random initialisation, no pre-training.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

# the bundled English/French sample, in prepare_data.sh's layout
RAW_DIR=${RAW_DIR:-$(dirname "$0")/data}
WORK_DIR=${WORK_DIR:-work/quickstart}
PRETRAIN_UPDATES=${PRETRAIN_UPDATES:-1200}
FINETUNE_UPDATES=${FINETUNE_UPDATES:-1200}
# the whole sentence masked (k = m), not the paper's 50%: on this data and
# budget it gave the lower fine-tuned validation loss (projects/low_resource/log.md,
# "The quickstart with k = m")
MASK_RATIO=${MASK_RATIO:-1.0}
# a small Transformer that trains in minutes on a CPU
MODEL_ARGS=${MODEL_ARGS:-"--encoder-layers 2 --decoder-layers 2 \
    --encoder-embed-dim 128 --decoder-embed-dim 128 \
    --encoder-ffn-embed-dim 512 --decoder-ffn-embed-dim 512 \
    --encoder-attention-heads 4 --decoder-attention-heads 4 --num-workers 0"}

export NUM_GPUS=${NUM_GPUS:-0}
here=$(dirname "$0")
start=$SECONDS

echo "== 1/4 data: subwords and binarized data in $WORK_DIR"
RAW_DIR=$RAW_DIR WORK_DIR=$WORK_DIR VOCAB_SIZE=4000 bash "$here/prepare_data.sh"

if [ "$PRETRAIN_UPDATES" -gt 0 ]; then
    echo "== 2/4 MASS pre-training on English and French monolingual text"
    DATA_BIN=$WORK_DIR/data-bin SAVE_DIR=$WORK_DIR/checkpoints/pretrain MASK_RATIO=$MASK_RATIO \
        MAX_TOKENS=2048 TOKENS_PER_UPDATE=2048 LR=0.001 WARMUP=300 \
        MAX_UPDATE=$PRETRAIN_UPDATES VALIDATE_EVERY=400 EXTRA_ARGS="$MODEL_ARGS" \
        bash "$here/pretrain.sh"
    pretrained=$WORK_DIR/checkpoints/pretrain/checkpoint_best.pt
else
    echo "== 2/4 no pre-training (PRETRAIN_UPDATES=0): fine-tuning from random initialisation"
    pretrained=""
fi

echo "== 3/4 fine-tuning en->fr on the bundled pairs"
DATA_BIN=$WORK_DIR/data-bin PRETRAINED=$pretrained \
    SAVE_DIR=$WORK_DIR/checkpoints/ft-en-fr MAX_TOKENS=2048 TOKENS_PER_UPDATE=2048 \
    LR=0.001 WARMUP=300 MAX_UPDATE=$FINETUNE_UPDATES EXTRA_ARGS="$MODEL_ARGS" \
    bash "$here/finetune_nmt.sh"

echo "== 4/4 translating the test set"
DATA_BIN=$WORK_DIR/data-bin CHECKPOINT=$WORK_DIR/checkpoints/ft-en-fr/checkpoint_best.pt \
    REFERENCE=$RAW_DIR/test.fr bash "$here/generate.sh"

echo "== done in $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
