#!/usr/bin/env bash
# The paper's abstractive summarization (section 4.3, Gigaword; XSum and
# CNN/Daily Mail in MASS-summarization): a MASS checkpoint (the paper
# pre-trains on English monolingual text alone: examples/paper/pretrain.sh
# with LANGS=en) fine-tuned on article -> summary pairs, and the same model
# from random initialisation at equal settings (INITS="mass random"); the
# test set summarized with beam search (beam 5, length penalty 1, no
# repeated trigram) and scored with ROUGE-1/2/L F1 against the raw
# summaries: WORK_DIR/results.tsv. Fine-tuning and decoding settings are
# MASS-summarization's (its README: lr 5e-4, 4,000 warm-up updates, label
# smoothing 0.1, 4096 tokens x 8 accumulated, 25 epochs, articles cut to
# 512 tokens); the paper gives none. SCALE=small or tiny shrinks everything.
# DATA_BIN: mass-binarize --dict (the pre-training dict.txt) --langs SRC,TGT
# --pair SRC-TGT --train/--valid/--test. Runs examples/finetune_nmt.sh and
# examples/generate.sh (METRIC=rouge). A checkpoint with language
# embeddings (cross-lingual) is used with those of LANG_PAIR.
# Interrupted? Run the same command again: scored runs are kept, a
# fine-tuning resumes from its checkpoint_last.pt; other settings than those
# of the scored runs stop the recipe (WORK_DIR/.settings), more INITS add runs.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help
source "$(dirname "$0")/settings.sh"  # SCALE, by_scale, the models, run_cmd, ...

DATA_BIN=${DATA_BIN:?set DATA_BIN to mass-binarize output: the pre-training dict.txt and the train/valid/test SRC-TGT pairs}
REFERENCE=${REFERENCE:?set REFERENCE to the raw test summaries, one a line}
PRETRAINED=${PRETRAINED:?set PRETRAINED to the checkpoint of examples/paper/pretrain.sh (LANGS=en)}
SRC=${SRC:-document}
TGT=${TGT:-summary}
INITS=${INITS:-mass random}              # random: the baseline without pre-training
LANG_PAIR=${LANG_PAIR:-en-en}            # language embeddings of a cross-lingual checkpoint
WORK_DIR=${WORK_DIR:-work/paper-summarization-$SCALE}
MODEL_ARGS=${MODEL_ARGS:-$(by_scale "$PAPER_MODEL" "$SMALL_MODEL" "$TINY_MODEL")}  # the pre-training's
MAX_SOURCE=${MAX_SOURCE:-$(by_scale 512 512 64)}   # [sum] --max-source-positions 512
# summaries are not cut: a longer one in the valid set stops fairseq-train (tiny:
# few BPE codes split a summary into many pieces)
MAX_TARGET=${MAX_TARGET:-$(by_scale 512 512 256)}  # positions, as the source's
# [sum] --max-tokens 4096 --update-freq 8 (per GPU; its GPU count is not given: one)
MAX_TOKENS=${MAX_TOKENS:-$(by_scale 4096 4096 256)}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$(by_scale 32768 32768 256)}
LR=${LR:-$(by_scale 0.0005 0.0005 0.001)}      # [sum] --lr 0.0005 (tuned among 1e-4, 2e-4, 5e-4)
WARMUP=${WARMUP:-$(by_scale 4000 1000 2)}      # [sum] --warmup-updates 4000
LABEL_SMOOTHING=${LABEL_SMOOTHING:-0.1}        # [sum]
MAX_EPOCH=${MAX_EPOCH:-25}                     # [sum] --max-epoch 25
MAX_UPDATE=${MAX_UPDATE:-$(by_scale 0 20000 6)}  # 0: no limit but MAX_EPOCH
BEAM=${BEAM:-5}                                # [sum] --beam 5
LENPEN=${LENPEN:-1.0}                          # [sum] --lenpen 1.0
NO_REPEAT_NGRAM=${NO_REPEAT_NGRAM:-3}          # [sum] --no-repeat-ngram-size 3
# [sum] --min-len 50 is for CNN/Daily Mail's multi-sentence summaries; Gigaword
# and XSum summaries are one sentence: no minimum, at most 60 subwords
MIN_LEN=${MIN_LEN:-1}
MAX_LEN=${MAX_LEN:-60}
POST_PROCESS=${POST_PROCESS:-subword_nmt}      # the subword marker of DATA_BIN's text
DETOK=${DETOK:---tokenizer moses}              # fairseq-generate's detokenizer
LOG_INTERVAL=${LOG_INTERVAL:-$(by_scale 100 100 2)}

need "$DATA_BIN/dict.txt" DATA_BIN \
    "binarize the pairs with mass-binarize --dict (the pre-training dict.txt)"
for split in train valid test; do
    need "$DATA_BIN/$split.$SRC-$TGT.$SRC.bin" "DATA_BIN, SRC and TGT" \
        "mass-binarize --langs $SRC,$TGT --pair $SRC-$TGT --$split PREFIX writes it"
done
need "$REFERENCE" REFERENCE "give the raw test summaries"
[[ " $INITS " != *" mass "* ]] || need "$PRETRAINED" PRETRAINED \
    "pre-train with examples/paper/pretrain.sh first (or INITS=random)"
same_dictionary "train.$SRC-$TGT" "valid.$SRC-$TGT" "test.$SRC-$TGT"
make_dir "$WORK_DIR"
same_settings "run by summarization.sh" "Use another WORK_DIR, or delete $WORK_DIR to start\
 over." INITS
results=$WORK_DIR/results.tsv
[ "$DRY_RUN" = 1 ] || [ -f "$results" ] || printf 'init\tROUGE-1\tROUGE-2\tROUGE-L\n' > "$results"

lengths="--truncate-source --max-source-positions $MAX_SOURCE --max-target-positions $MAX_TARGET"
for init in $INITS; do
    if [ "$DRY_RUN" != 1 ] && grep -q "^$init	" "$results"; then
        progress "$init: scored before, skipping"
        continue
    fi
    save=$WORK_DIR/checkpoints/$init
    pretrained=""
    [ "$init" = mass ] && pretrained=$PRETRAINED
    progress "$init: fine-tuning $SRC->$TGT, $TOKENS_PER_UPDATE tokens per update, from" \
        "${pretrained:-random initialisation}"
    run_recipe env DATA_BIN="$DATA_BIN" PRETRAINED="$pretrained" SAVE_DIR="$save" \
        SRC="$SRC" TGT="$TGT" MAX_TOKENS="$MAX_TOKENS" TOKENS_PER_UPDATE="$TOKENS_PER_UPDATE" \
        LR="$LR" WARMUP="$WARMUP" MAX_UPDATE="$MAX_UPDATE" PATIENCE=-1 \
        LOG_INTERVAL="$LOG_INTERVAL" EXTRA_ARGS="$(flat --embedding-lang-pair "$LANG_PAIR" \
            "$MODEL_ARGS" "$PAPER_OPTIM" --label-smoothing "$LABEL_SMOOTHING" \
            --max-epoch "$MAX_EPOCH" "$lengths" --skip-invalid-size-inputs-valid-test \
            "$(valid_args)")" bash "$EXAMPLES_DIR/finetune_nmt.sh"
    progress "$init: summarizing the test set (beam $BEAM, ROUGE)"
    run_to "$WORK_DIR/scores.$init" env DATA_BIN="$DATA_BIN" \
        CHECKPOINT="$save/checkpoint_best.pt" SRC="$SRC" TGT="$TGT" REFERENCE="$REFERENCE" \
        OUTPUT="$WORK_DIR/test.$init.txt" METRIC=rouge BEAM="$BEAM" MAX_LEN_A=0 \
        MAX_LEN_B="$MAX_LEN" POST_PROCESS="$POST_PROCESS" \
        EXTRA_ARGS="$(flat "$DETOK" --lenpen "$LENPEN" --min-len "$MIN_LEN" \
            --no-repeat-ngram-size "$NO_REPEAT_NGRAM" "$lengths")" \
        bash "$EXAMPLES_DIR/generate.sh"
    if [ "$DRY_RUN" != 1 ]; then
        cat "$WORK_DIR/scores.$init"
        # "ROUGE-1 = R1 ROUGE-2 = R2 ROUGE-L = RL" (mass-score-rouge) to a row
        awk -v init="$init" '/^ROUGE-1 = / { print init "\t" $3 "\t" $6 "\t" $9 }' \
            "$WORK_DIR/scores.$init" >> "$results"
    fi
done
[ "$DRY_RUN" = 1 ] || print_table "$results"
finished "finished: $results"
