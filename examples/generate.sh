#!/usr/bin/env bash
# Stage 4: decode a test set with fairseq-generate and score it against the raw
# reference: sacreBLEU and chrF (METRIC=bleu) or ROUGE (METRIC=rouge). Every
# source line gets a hypothesis, or we stop.
set -euo pipefail

DATA_BIN=${DATA_BIN:-work/demo/data-bin}
CHECKPOINT=${CHECKPOINT:-checkpoints/ft-en-fr/checkpoint_best.pt}
SRC=${SRC:-en}
TGT=${TGT:-fr}
SUBSET=${SUBSET:-test}
REFERENCE=${REFERENCE:-examples/data/test.$TGT}
OUTPUT=${OUTPUT:-${CHECKPOINT%.pt}.$SUBSET.$SRC-$TGT.txt}
BEAM=${BEAM:-5}
MAX_LEN_A=${MAX_LEN_A:-1.5}                # hypotheses of at most A * source + B
MAX_LEN_B=${MAX_LEN_B:-10}                 # subwords (summaries: A=0, B=60)
BATCH_SIZE=${BATCH_SIZE:-64}
POST_PROCESS=${POST_PROCESS:-sentencepiece}
METRIC=${METRIC:-bleu}
EXTRA_ARGS=${EXTRA_ARGS:-}

source "$(dirname "$0")/common.sh"
cpu_args=""
[ "$NUM_GPUS" -eq 0 ] && cpu_args="--cpu"

# --required-batch-size-multiple 1: fairseq 0.12 otherwise drops the last batch
# shellcheck disable=SC2086
fairseq-generate "$DATA_BIN" --user-dir "$USER_DIR" --task translation \
    -s "$SRC" -t "$TGT" --gen-subset "$SUBSET" --path "$CHECKPOINT" \
    --beam "$BEAM" --max-len-a "$MAX_LEN_A" --max-len-b "$MAX_LEN_B" \
    --batch-size "$BATCH_SIZE" --required-batch-size-multiple 1 \
    --post-process "$POST_PROCESS" $cpu_args $EXTRA_ARGS > "$OUTPUT.log"

# detokenized hypotheses (D- lines), in the order of the test set
grep -P '^D-[0-9]+\t' "$OUTPUT.log" | sed 's/^D-//' | sort -n -k1,1 | cut -f3 > "$OUTPUT"
expected=$(wc -l < "$REFERENCE")
got=$(wc -l < "$OUTPUT")
if [ "$got" -ne "$expected" ]; then
    echo "error: $got hypotheses for $expected reference lines (see $OUTPUT.log)" >&2
    exit 1
fi
echo "== $SRC->$TGT $SUBSET: $got sentences, hypotheses in $OUTPUT"
if [ "$METRIC" = rouge ]; then
    python "$(dirname "$0")/score_rouge.py" --reference "$REFERENCE" --hypothesis "$OUTPUT"
else
    sacrebleu "$REFERENCE" -i "$OUTPUT" -m bleu chrf -w 2 -f text
fi
