# Sourced by unsup_offline_bt.sh: the stages of one round of offline
# back-translation, in WORK_DIR/roundR/ (its variables: DATA_BIN, PRETRAINED,
# the model, generation and fine-tuning settings).

# model ROUND SRC-TGT: the model of that direction after ROUND (0: PRETRAINED)
model() {
    if [ "$1" = 0 ]; then
        echo "$PRETRAINED"
    else
        echo "$WORK_DIR/round$1/ckpt-$2/checkpoint_best.pt"
    fi
}

# sentences PREFIX: the number of sentences of a binarized file (its .idx
# header); in a dry run without the file, 1 and a note
sentences() {
    if [ "$DRY_RUN" = 1 ] && [ ! -f "$1.idx" ]; then
        progress "dry run: $1.idx is not there: one part of it assumed" >&2
        echo 1
        return
    fi
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
            "$( [ "$DRY_RUN" = 1 ] && echo the || wc -l < "$folder/gen-$tgt-$src/pairs.$src")" \
            "synthetic pairs"
        run_recipe env DATA_BIN="$data" PRETRAINED="$(model $((round - 1)) "$src-$tgt")" \
            SAVE_DIR="$save" SRC="$src" TGT="$tgt" MAX_TOKENS="$MAX_TOKENS" \
            TOKENS_PER_UPDATE="$TOKENS_PER_UPDATE" LR="$LR" WARMUP="$WARMUP" \
            MAX_UPDATE="$MAX_UPDATE" PATIENCE=-1 LOG_INTERVAL="$LOG_INTERVAL" \
            EXTRA_ARGS="$(flat --language-embeddings "$L1,$L2" "$MODEL_ARGS" "$PAPER_OPTIM" \
                --label-smoothing 0 "$(valid_args)")" bash "$EXAMPLES_DIR/finetune_nmt.sh"
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
