#!/usr/bin/env bash
# The paper's low-resource NMT (section 4.2): the pre-trained MASS model
# fine-tuned on 10K, 100K or 1M sentence pairs (TRAIN_SUBSETS of DATA_BIN)
# for 20,000 updates with Adam at 1e-4, the model with the best validation
# loss kept, then the test set translated; and, at equal settings, the same
# model trained from random initialisation (INITS="mass random"): the gain
# of MASS over no pre-training. Both directions. Each run goes through
# examples/finetune_nmt.sh and examples/generate.sh (detokenized with Moses,
# sacreBLEU against the raw reference). Results: WORK_DIR/results.tsv
# (subset, direction, init, BLEU, chrF). SCALE=small or tiny shrinks everything.
# DATA_BIN holds dict.txt (the pre-training dictionary), the valid/test pairs
# and SUBSET.L1-L2.{L1,L2} for each of TRAIN_SUBSETS (e.g. "train10k
# train100k train1m"), or one DATA_BIN per size, run with its own WORK_DIR.
# Interrupted? Run the same command again: scored runs are kept, a
# fine-tuning resumes from its checkpoint_last.pt; other settings than those
# of the scored runs stop the recipe (WORK_DIR/.settings), more
# TRAIN_SUBSETS, DIRECTIONS or INITS add runs.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help
source "$(dirname "$0")/settings.sh"  # SCALE, by_scale, the models, run_cmd, ...

DATA_BIN=${DATA_BIN:?set DATA_BIN to mass-binarize output with the pre-training dict.txt, the training pairs and the valid/test pairs}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
PRETRAINED=${PRETRAINED:?set PRETRAINED to the checkpoint of examples/paper/pretrain.sh}
TRAIN_SUBSETS=${TRAIN_SUBSETS:-train}    # e.g. "train10k train100k train1m"
L1=${L1:-en}
L2=${L2:-fr}
DIRECTIONS=${DIRECTIONS:-$L1-$L2 $L2-$L1}
INITS=${INITS:-mass random}              # random: the baseline without pre-training
WORK_DIR=${WORK_DIR:-work/paper-low-resource-$SCALE}
MODEL_ARGS=${MODEL_ARGS:-$(by_scale "$PAPER_MODEL" "$SMALL_MODEL" "$TINY_MODEL")}
# the paper gives no batch size: [unsup]'s fine-tuning on pairs (the en-ro
# command with --mt_steps) takes 2000 tokens per GPU, x 8 GPUs = 16,000
MAX_TOKENS=${MAX_TOKENS:-$(by_scale 2000 4096 256)}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$(by_scale 16000 32768 256)}
LR=${LR:-$(by_scale 0.0001 0.0001 0.001)}   # [paper 4.2, low-resource] 1e-4
WARMUP=${WARMUP:-$(by_scale 4000 1000 2)}   # [unsup] XLM's 4000
MAX_UPDATE=${MAX_UPDATE:-$(by_scale 20000 5000 6)}  # [paper 4.2, low-resource] 20,000 steps
VALIDATE_EVERY=${VALIDATE_EVERY:-$(by_scale 1000 500 3)}  # updates; best by valid loss
BEAM=${BEAM:-1}                          # [unsup] translate.py's default
POST_PROCESS=${POST_PROCESS:-subword_nmt}  # the subword marker of DATA_BIN's text
DETOK=${DETOK:---tokenizer moses}        # fairseq-generate's detokenizer
LOG_INTERVAL=${LOG_INTERVAL:-$(by_scale 100 100 2)}

need "$DATA_BIN/dict.txt" DATA_BIN \
    "binarize the pairs with mass-binarize --dict (the pre-training dict.txt)"
for lang in "$L1" "$L2"; do
    need "$REFERENCE_PREFIX.$lang" REFERENCE_PREFIX "give the prefix of the raw test text"
    for subset in $TRAIN_SUBSETS; do
        need "$DATA_BIN/$subset.$L1-$L2.$lang.bin" "DATA_BIN and TRAIN_SUBSETS" \
            "mass-binarize --pair $L1-$L2 --train PREFIX writes train.$L1-$L2.$lang"
    done
done
[[ " $INITS " != *" mass "* ]] || need "$PRETRAINED" PRETRAINED \
    "pre-train with examples/paper/pretrain.sh first (or INITS=random)"
pairs=()  # the pair files it reads, named either way round
for subset in $TRAIN_SUBSETS valid test; do pairs+=("$subset.$L1-$L2" "$subset.$L2-$L1"); done
same_dictionary "${pairs[@]}"
make_dir "$WORK_DIR"
same_settings "run by low_resource.sh" "Use another WORK_DIR, or delete $WORK_DIR to start\
 over." TRAIN_SUBSETS DIRECTIONS INITS
results=$WORK_DIR/results.tsv
if [ "$DRY_RUN" != 1 ] && [ ! -f "$results" ]; then
    printf 'subset\tdirection\tinit\tBLEU\tchrF\n' > "$results"
fi

# [paper 4.2, low-resource] a fixed number of steps, the best model on the
# validation set: validation and checkpoints every VALIDATE_EVERY updates,
# none per epoch
schedule="--validate-interval-updates $VALIDATE_EVERY --save-interval-updates $VALIDATE_EVERY
 --keep-interval-updates 1 --validate-interval 1000000 --save-interval 1000000"
for subset in $TRAIN_SUBSETS; do
    for direction in $DIRECTIONS; do
        src=${direction%-*} tgt=${direction#*-}
        for init in $INITS; do
            name=$subset.$direction.$init
            if [ "$DRY_RUN" != 1 ] && grep -q "^$subset	$direction	$init	" "$results"; then
                progress "$name: scored before, skipping"
                continue
            fi
            save=$WORK_DIR/checkpoints/$name
            pretrained=""
            [ "$init" = mass ] && pretrained=$PRETRAINED
            progress "$name: $MAX_UPDATE updates of $TOKENS_PER_UPDATE tokens on $subset," \
                "from ${pretrained:-random initialisation}"
            # the same model either way: the checkpoint's language embeddings
            # (and XLM's optimizer, plain cross-entropy as its mt_step)
            run_recipe env DATA_BIN="$DATA_BIN" PRETRAINED="$pretrained" SAVE_DIR="$save" \
                SRC="$src" TGT="$tgt" MAX_TOKENS="$MAX_TOKENS" \
                TOKENS_PER_UPDATE="$TOKENS_PER_UPDATE" LR="$LR" WARMUP="$WARMUP" \
                MAX_UPDATE="$MAX_UPDATE" PATIENCE=-1 LOG_INTERVAL="$LOG_INTERVAL" \
                EXTRA_ARGS="$(flat --train-subset "$subset" --language-embeddings "$L1,$L2" \
                    "$MODEL_ARGS" "$PAPER_OPTIM" --label-smoothing 0 "$schedule" \
                    "$(valid_args)")" bash "$EXAMPLES_DIR/finetune_nmt.sh"
            run_cmd env DATA_BIN="$DATA_BIN" CHECKPOINT="$save/checkpoint_best.pt" SRC="$src" \
                TGT="$tgt" REFERENCE="$REFERENCE_PREFIX.$tgt" OUTPUT="$WORK_DIR/test.$name.txt" \
                BEAM="$BEAM" POST_PROCESS="$POST_PROCESS" EXTRA_ARGS="$DETOK" \
                SCORES="$WORK_DIR/scores.$name" bash "$EXAMPLES_DIR/generate.sh"
            [ "$DRY_RUN" = 1 ] || printf '%s\t%s\t%s\t%s\n' "$subset" "$direction" "$init" \
                "$(cat "$WORK_DIR/scores.$name")" >> "$results"
        done
    done
done
[ "$DRY_RUN" = 1 ] || print_table "$results"
finished "finished: $results"
