#!/usr/bin/env bash
# The paper's MASS pre-training: masked_s2s on the monolingual text of LANGS
# (cross-lingual with two languages: one model, a learned embedding per
# language), the 6+6-layer, 1024-dimension Transformer, half of each
# sentence masked, Adam at 1e-4, 24,000 tokens per update (section 4.1 of
# the paper; MASS-unsupNMT's README command). LANGS=en pre-trains the
# English model for summarization. SCALE=small or tiny shrinks everything.
#
# Input: DATA_BIN from mass-binarize (dict.txt, train.LANG and valid.LANG of
# each language, all made with that dict.txt). Output:
# SAVE_DIR/checkpoint_best.pt (lowest validation loss) and checkpoint_last.pt.
# Sentences longer than MAX_TOKENS subwords are left out of training (the
# log counts them); validation takes up to 1024. Interrupted? Run the same
# command again: fairseq resumes from SAVE_DIR/checkpoint_last.pt; a finished
# run is marked (SAVE_DIR/.done.pretrain) and skipped, or refused if its
# settings (SAVE_DIR/.settings) differ from the new ones.
#
# On the GPUs of one machine, fairseq starts one process per GPU (fp16).
# On several machines, run this script on each one with LAUNCHER, a
# torchrun command without the script (examples/paper/slurm_pretrain.sh
# does it under SLURM):
#   LAUNCHER="torchrun --nnodes 2 --node_rank R --nproc_per_node 8
#     --master_addr HOST0 --master_port 29500" DATA_BIN=... bash examples/paper/pretrain.sh
# --update-freq then counts every rank of every node. DRY_RUN=1 prints the
# fairseq-train command without running it (and without data). On CPUs, the
# same with gloo:
#   NUM_GPUS=0 LAUNCHER="torchrun --nproc_per_node 2" SCALE=tiny ... pretrain.sh
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help
source "$(dirname "$0")/settings.sh"  # SCALE, by_scale, the models, LAUNCHER, ...

DATA_BIN=${DATA_BIN:?set DATA_BIN to mass-binarize output: dict.txt, train.LANG and valid.LANG for each of LANGS}
SAVE_DIR=${SAVE_DIR:-checkpoints/paper-pretrain-$SCALE}
LANGS=${LANGS:-en,fr}
MODEL_ARGS=${MODEL_ARGS:-$(by_scale "$PAPER_MODEL" "$SMALL_MODEL" "$TINY_MODEL")}
# [paper 4.1] a fragment of about half the sentence ([unsup] --word_mass 0.5);
# spans start as [unsup]'s shuffle_segments draws them (20% at the start of
# the sentence, 20% at its end, the rest anywhere).
MASK_RATIO=${MASK_RATIO:-0.5}
SPAN_START=${SPAN_START:-mass}
# [paper 4.1] 3,000 tokens per GPU ([unsup] --tokens_per_batch 3000) on 8 GPUs
MAX_TOKENS=${MAX_TOKENS:-$(by_scale 3000 4096 256)}   # per process and step
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$(by_scale 24000 32768 512)}  # 8 x 3000
# [paper 4.1] lr 1e-4 ([unsup] adam_inverse_sqrt,lr=0.0001; warm-up: XLM's 4000)
LR=${LR:-$(by_scale 0.0001 0.0001 0.001)}
WARMUP=${WARMUP:-$(by_scale 4000 4000 5)}
# [unsup] --max_epoch 100 epochs of 6,250 updates (settings.sh): 625,000
# updates; the paper gives no count. Validation every epoch, as [unsup].
MAX_UPDATE=${MAX_UPDATE:-$(by_scale 625000 100000 20)}
VALIDATE_EVERY=${VALIDATE_EVERY:-$(by_scale 6250 2000 10)}  # updates
# [unsup] one MASS step per language in turn: languages weigh the same
# whatever their size (fairseq samples n_l ** alpha; 0: equal shares)
LANG_SAMPLING_ALPHA=${LANG_SAMPLING_ALPHA:-0}
LAUNCHER=${LAUNCHER:-}                   # e.g. "torchrun --nproc_per_node 8"
LOG_INTERVAL=${LOG_INTERVAL:-$(by_scale 100 100 5)}  # updates between progress lines
EXTRA_ARGS=${EXTRA_ARGS:-}               # anything else for fairseq-train

need "$DATA_BIN/dict.txt" DATA_BIN "binarize the text with mass-binarize (data-prep/)"
IFS=, read -r -a langs <<< "$LANGS"
for lang in "${langs[@]}"; do
    need "$DATA_BIN/train.$lang.bin" "DATA_BIN and LANGS" \
        "mass-binarize --mono-train writes train.$lang (is $lang one of its --langs?)"
    need "$DATA_BIN/valid.$lang.bin" "DATA_BIN and LANGS" \
        "mass-binarize --mono-valid writes valid.$lang"
done
same_dictionary "${langs[@]/#/train.}" "${langs[@]/#/valid.}"
valid_subsets=$(printf 'valid.%s,' "${langs[@]}")
make_dir "$SAVE_DIR"
WORK_DIR=$SAVE_DIR  # where the done mark and the settings go
same_settings "trained by pretrain.sh" "Use another SAVE_DIR, or train on from its\
 checkpoint_last.pt with these settings: delete $SAVE_DIR/.done.pretrain."
if is_done pretrain; then
    progress "pre-training in $SAVE_DIR finished before, skipping"
    exit 0
fi
device=$(launch_device_args)
ranks=$(launcher_ranks)
update_freq=$(grep -oP -- '--update-freq \K[0-9]+' <<< "$device")
tokens=$(( ranks * MAX_TOKENS * update_freq ))  # at most, per update
progress "SCALE=$SCALE: $MAX_UPDATE updates of up to $tokens tokens ($ranks process(es) x" \
    "$MAX_TOKENS x update-freq $update_freq; TOKENS_PER_UPDATE=$TOKENS_PER_UPDATE), languages" \
    "$LANGS, mask ratio $MASK_RATIO, lr $LR"
if [ "$tokens" -gt $(( TOKENS_PER_UPDATE * 3 / 2 )) ]; then
    progress "note: $tokens tokens per update for TOKENS_PER_UPDATE=$TOKENS_PER_UPDATE:" \
        "lower MAX_TOKENS to $(( TOKENS_PER_UPDATE / ranks )) to keep it"
fi
# shellcheck disable=SC2046,SC2086
train_cmd "$DATA_BIN" --user-dir "$USER_DIR" \
    --task masked_s2s --langs "$LANGS" --lang-sampling-alpha "$LANG_SAMPLING_ALPHA" \
    --valid-subset "${valid_subsets%,}" $MODEL_ARGS \
    --criterion masked_s2s_loss --mask-ratio "$MASK_RATIO" --span-start "$SPAN_START" \
    $PAPER_OPTIM --lr "$LR" --warmup-updates "$WARMUP" \
    --max-tokens "$MAX_TOKENS" --max-update "$MAX_UPDATE" \
    --validate-interval-updates "$VALIDATE_EVERY" --save-interval-updates "$VALIDATE_EVERY" \
    --keep-interval-updates 1 --no-epoch-checkpoints --skip-invalid-size-inputs-valid-test \
    --save-dir "$SAVE_DIR" --log-format simple --log-interval "$LOG_INTERVAL" \
    $(valid_args) $device $EXTRA_ARGS
done_mark pretrain
finished "finished: $SAVE_DIR/checkpoint_best.pt"
