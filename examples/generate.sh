#!/usr/bin/env bash
# Stage 4: decode a test set with fairseq-generate and score it against the raw
# reference: sacreBLEU and chrF (METRIC=bleu) or ROUGE (METRIC=rouge). Every
# source line gets a hypothesis, or we stop. SCORES=FILE (METRIC=bleu) also
# writes "BLEU<tab>chrF" to FILE.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

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
SCORES=${SCORES:-}
EXTRA_ARGS=${EXTRA_ARGS:-}

source "$SHELL_LIB/common.sh"
if [ -n "$SCORES" ] && [ "$METRIC" != bleu ]; then
    echo "error: SCORES=$SCORES needs METRIC=bleu" >&2
    exit 1
fi

# shellcheck disable=SC2086
scores=$(decode_and_score "$SRC->$TGT $SUBSET" "$METRIC" "$REFERENCE" "$OUTPUT" "$DATA_BIN" \
    --task translation -s "$SRC" -t "$TGT" --gen-subset "$SUBSET" --path "$CHECKPOINT" \
    --beam "$BEAM" --max-len-a "$MAX_LEN_A" --max-len-b "$MAX_LEN_B" \
    --batch-size "$BATCH_SIZE" --post-process "$POST_PROCESS" $EXTRA_ARGS)
echo "$scores"
if [ -n "$SCORES" ]; then
    bleu_chrf <<< "$scores" > "$SCORES"
fi
