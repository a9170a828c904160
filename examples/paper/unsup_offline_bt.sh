#!/usr/bin/env bash
# Unsupervised NMT by offline back-translation from the paper's cross-lingual
# MASS checkpoint, in ROUNDS rounds. Round r, for each direction SRC->TGT:
#   1. the round r-1 model of SRC->TGT (round 1: PRETRAINED) translates about
#      MONO_LINES sentences of DATA_BIN/train.SRC with fairseq-generate
#      (greedy), a different part of the text every round (fairseq-generate
#      shards its batches by --distributed-world-size and --distributed-rank);
#   2. the pairs (synthetic TGT, real SRC) are binarized in DATA_BIN's
#      dictionary (mass-binarize) next to DATA_BIN's valid pairs;
#   3. TGT->SRC is fine-tuned on them from its round r-1 model
#      (examples/finetune_nmt.sh, MAX_UPDATE updates, best by valid loss);
#   4. it translates the test set (examples/generate.sh), detokenized (Moses,
#      DETOK), scored with sacreBLEU against the raw reference.
# Results: WORK_DIR/results.tsv (round, direction, BLEU, chrF).
# The paper back-translates online (unsup_online_bt.sh); this offline variant
# has the same model, optimizer and budget: ROUNDS x 2 directions x
# MAX_UPDATE = the online run's 187,500 updates. SCALE=tiny ROUNDS=1 runs
# one round on CPUs in about a minute (eight fairseq processes).
# Interrupted? Run the same command again: finished steps are kept (marks in
# WORK_DIR), a fine-tuning resumes from its checkpoint_last.pt.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help
source "$(dirname "$0")/settings.sh"  # SCALE, by_scale, the models, run_cmd, ...

DATA_BIN=${DATA_BIN:?set DATA_BIN to mass-binarize output: dict.txt, train.L1/train.L2 and the valid/test pairs}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
PRETRAINED=${PRETRAINED:?set PRETRAINED to the checkpoint of examples/paper/pretrain.sh}
L1=${L1:-en}
L2=${L2:-fr}
WORK_DIR=${WORK_DIR:-work/paper-offline-$SCALE}
MODEL_ARGS=${MODEL_ARGS:-$(by_scale "$PAPER_MODEL" "$SMALL_MODEL" "$TINY_MODEL")}
ROUNDS=${ROUNDS:-$(by_scale 3 3 1)}
# [unsup] get-data-nmt.sh keeps 5M monolingual sentences a language (N_MONO)
MONO_LINES=${MONO_LINES:-$(by_scale 5000000 200000 40)}  # about; per language and round
GEN_BEAM=${GEN_BEAM:-1}                  # [unsup] greedy back-translation
GEN_BATCH=${GEN_BATCH:-$(by_scale 256 256 8)}  # sentences per generation batch
# [unsup] --tokens_per_batch 2000 per GPU, 8 GPUs: 16,000 tokens per update
MAX_TOKENS=${MAX_TOKENS:-$(by_scale 2000 4096 256)}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$(by_scale 16000 32768 256)}
LR=${LR:-$(by_scale 0.0001 0.0001 0.001)}   # [unsup] lr=0.0001
WARMUP=${WARMUP:-$(by_scale 4000 1000 2)}   # [unsup] XLM's 4000
# per round and direction: 187,500 / (3 rounds x 2 directions)
MAX_UPDATE=${MAX_UPDATE:-$(by_scale 31250 3000 4)}
BEAM=${BEAM:-1}                          # test set; [unsup] translate.py's default
POST_PROCESS=${POST_PROCESS:-subword_nmt}  # the subword marker of DATA_BIN's text
DETOK=${DETOK:---tokenizer moses}        # fairseq-generate's detokenizer
LOG_INTERVAL=${LOG_INTERVAL:-$(by_scale 100 100 2)}

need "$DATA_BIN/dict.txt" DATA_BIN "binarize the text with mass-binarize (data-prep/)"
for lang in "$L1" "$L2"; do
    need "$DATA_BIN/train.$lang.idx" DATA_BIN "mass-binarize --mono-train writes train.$lang"
    need "$REFERENCE_PREFIX.$lang" REFERENCE_PREFIX "give the prefix of the raw test text"
done
need "$PRETRAINED" PRETRAINED "pre-train with examples/paper/pretrain.sh first"
make_dir "$WORK_DIR"
results=$WORK_DIR/results.tsv
[ "$DRY_RUN" = 1 ] || [ -f "$results" ] || printf 'round\tdirection\tBLEU\tchrF\n' > "$results"

# model ROUND SRC-TGT: the model of that direction after ROUND (0: PRETRAINED)
model() {
    if [ "$1" = 0 ]; then
        echo "$PRETRAINED"
    else
        echo "$WORK_DIR/round$1/ckpt-$2/checkpoint_best.pt"
    fi
}

# sentences PREFIX: the number of sentences of a binarized file (its .idx header)
sentences() {
    python -c 'import struct, sys
with open(sys.argv[1], "rb") as idx:
    assert idx.read(9) == b"MMIDIDX\x00\x00", "not a fairseq mmap index: " + sys.argv[1]
    idx.seek(18)
    print(struct.unpack("<Q", idx.read(8))[0])' "$1.idx"
}

# back_translate ROUND SRC TGT: round ROUND's pairs, synthetic TGT for real SRC
# (step 1), in WORK_DIR/roundROUND/gen-SRC-TGT/pairs.{SRC,TGT}
back_translate() {
    local round=$1 src=$2 tgt=$3 gen shards file empty
    gen=$WORK_DIR/round$round/gen-$src-$tgt
    is_done "round$round.gen-$src-$tgt" && return
    shards=$(( ($(sentences "$DATA_BIN/train.$src") + MONO_LINES - 1) / MONO_LINES ))
    progress "round $round: $src->$tgt translates part $(( (round - 1) % shards + 1 )) of" \
        "$shards of $DATA_BIN/train.$src with $(model $((round - 1)) "$src-$tgt")"
    make_dir "$gen/bin"
    if [ "$DRY_RUN" != 1 ]; then  # DATA_BIN's train.SRC, seen as a test set without targets
        for file in "dict.$src.txt" "dict.$tgt.txt"; do
            ln -sf "$(realpath "$DATA_BIN/dict.txt")" "$gen/bin/$file"
        done
        for ext in bin idx; do
            ln -sf "$(realpath "$DATA_BIN/train.$src.$ext")" "$gen/bin/test.$src-$tgt.$src.$ext"
        done
    fi
    # [unsup] bt_step: greedy, at most 1.3 x the source + 5 tokens
    # shellcheck disable=SC2046
    run_to "$gen/generate.log" fairseq-generate "$gen/bin" --user-dir "$USER_DIR" \
        --task translation -s "$src" -t "$tgt" --gen-subset test \
        --path "$(model $((round - 1)) "$src-$tgt")" --beam "$GEN_BEAM" \
        --batch-size "$GEN_BATCH" --required-batch-size-multiple 1 --max-len-a 1.3 \
        --max-len-b 5 --skip-invalid-size-inputs-valid-test \
        --distributed-world-size "$shards" --distributed-rank $(( (round - 1) % shards )) \
        $(decode_device_args)
    # each real sentence (S-, subwords) with its translation (H-, subwords);
    # an empty translation makes no pair, and the count of those is reported
    if [ "$DRY_RUN" != 1 ]; then
        empty=$(awk -F'\t' -v real="$gen/pairs.$src" -v synthetic="$gen/pairs.$tgt" '
            /^S-[0-9]+\t/ { source[substr($1, 3)] = $2 }
            /^H-[0-9]+\t/ { if ($3 != "") hypothesis[substr($1, 3)] = $3; else empty++ }
            END { for (id in hypothesis) { print source[id] > real; print hypothesis[id] > synthetic }
                  print empty + 0 }
        ' "$gen/generate.log")
        need "$gen/pairs.$tgt" "the round $round model" "see $gen/generate.log"
        progress "round $round: $src->$tgt: $(wc -l < "$gen/pairs.$tgt") synthetic pairs," \
            "$empty empty translation(s) left out"
    fi
    done_mark "round$round.gen-$src-$tgt"
}

# train ROUND SRC TGT: SRC->TGT on the synthetic SRC of TGT->SRC's pairs
# (steps 2 and 3), then its test score (step 4)
train() {
    local round=$1 src=$2 tgt=$3 folder data save file
    folder=$WORK_DIR/round$round data=$folder/bin-$src-$tgt save=$folder/ckpt-$src-$tgt
    if ! is_done "round$round.bin-$src-$tgt"; then
        run_to /dev/null mass-binarize --destdir "$data" --dict "$DATA_BIN/dict.txt" \
            --langs "$src,$tgt" --pair "$src-$tgt" --train "$folder/gen-$tgt-$src/pairs" --workers 1
        if [ "$DRY_RUN" != 1 ]; then
            for file in "$DATA_BIN"/valid.*-*.*; do ln -sf "$(realpath "$file")" "$data/"; done
        fi
        done_mark "round$round.bin-$src-$tgt"
    fi
    if ! is_done "round$round.train-$src-$tgt"; then
        progress "round $round: fine-tuning $src->$tgt on" \
            "$( [ "$DRY_RUN" = 1 ] || wc -l < "$folder/gen-$tgt-$src/pairs.$src") synthetic pairs"
        run_cmd env DATA_BIN="$data" PRETRAINED="$(model $((round - 1)) "$src-$tgt")" \
            SAVE_DIR="$save" SRC="$src" TGT="$tgt" MAX_TOKENS="$MAX_TOKENS" \
            TOKENS_PER_UPDATE="$TOKENS_PER_UPDATE" LR="$LR" WARMUP="$WARMUP" \
            MAX_UPDATE="$MAX_UPDATE" PATIENCE=-1 LOG_INTERVAL="$LOG_INTERVAL" \
            EXTRA_ARGS="$(flat --language-embeddings "$L1,$L2" "$MODEL_ARGS" "$PAPER_OPTIM" \
                --label-smoothing 0)" bash "$EXAMPLES_DIR/finetune_nmt.sh"
        done_mark "round$round.train-$src-$tgt"
    fi
    if [ "$DRY_RUN" = 1 ] || ! grep -q "^$round	$src-$tgt	" "$results"; then
        run_cmd env DATA_BIN="$DATA_BIN" CHECKPOINT="$save/checkpoint_best.pt" SRC="$src" \
            TGT="$tgt" REFERENCE="$REFERENCE_PREFIX.$tgt" OUTPUT="$folder/test.$src-$tgt.txt" \
            BEAM="$BEAM" POST_PROCESS="$POST_PROCESS" EXTRA_ARGS="$DETOK" \
            SCORES="$folder/scores.$src-$tgt" bash "$EXAMPLES_DIR/generate.sh"
        [ "$DRY_RUN" = 1 ] || printf '%s\t%s-%s\t%s\n' "$round" "$src" "$tgt" \
            "$(cat "$folder/scores.$src-$tgt")" >> "$results"
    fi
}

progress "offline back-translation from $PRETRAINED, SCALE=$SCALE: $ROUNDS round(s) of" \
    "about $MONO_LINES sentences a language and $MAX_UPDATE updates of $TOKENS_PER_UPDATE" \
    "tokens a direction"
for round in $(seq 1 "$ROUNDS"); do
    back_translate "$round" "$L1" "$L2"
    back_translate "$round" "$L2" "$L1"
    train "$round" "$L1" "$L2"
    train "$round" "$L2" "$L1"
done
[ "$DRY_RUN" = 1 ] || print_table "$results"
finished "finished: $results"
