#!/usr/bin/env bash
# XSum (BBC articles and their one-sentence summaries) for MASS's
# summarization fine-tuning: the original XSum download and its official
# train / validation / test split, tokenized and split with the subword model
# of a news_crawl.sh run (English pre-training: LANGS=en) and binarized with
# its dictionary as the pair document-summary: OUT/data-bin (translation
# -s document -t summary). The untokenized text stays in OUT/text/SPLIT.{document,summary}:
# score ROUGE against OUT/text/test.summary. A rerun skips what is done.
#   LANGS=en bash data-prep/news_crawl.sh && bash data-prep/xsum.sh
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)
source "$SHELL_LIB/usage.sh"  # --help

PREP=${PREP:-work/paper/en}                 # a news_crawl.sh output: subwords, dict.txt
OUT=${OUT:-$PREP/xsum}
DOWNLOADS=${DOWNLOADS:-work/paper/downloads}
XSUM_URL=${XSUM_URL:-http://bollin.inf.ed.ac.uk/public/direct/XSUM-EMNLP18-Summary-Data-Original.tar.gz}
SPLIT_URL=${SPLIT_URL:-https://raw.githubusercontent.com/EdinburghNLP/XSum/master/XSum-Dataset/XSum-TRAINING-DEV-TEST-SPLIT-90-5-5.json}
JOBS=${JOBS:-$(nproc)}

source "$(dirname "$0")/lib.sh"
if [ ! -f "$PREP/data-bin/dict.txt" ]; then
    echo "error: $PREP/data-bin/dict.txt is missing: run data-prep/news_crawl.sh with" \
         "OUT=$PREP first (XSum takes its subwords and dictionary)" >&2
    exit 1
fi
model=$(subword_model "$PREP")
mapfile -t made < <(made_with "$PREP")
check_settings "PREP=$PREP" "${made[@]}"

archive="$DOWNLOADS/xsum/$(basename "$XSUM_URL")"
split_file="$DOWNLOADS/xsum/$(basename "$SPLIT_URL")"
python -m mass_tools.download "$XSUM_URL" "$archive" > /dev/null
python -m mass_tools.download "$SPLIT_URL" "$split_file" > /dev/null

step extract "$OUT/text"/{train,valid,test}.{document,summary} -- python -m \
    mass_tools.extract_xsum --archive "$archive" --split "$split_file" --outdir "$OUT/text"
for split in train valid test; do
    for side in document summary; do
        subword_steps "$split.$side" "$model" en "$OUT/text/$split.$side" "$OUT/work" \
            "$split.$side"
    done
done
step binarize "$OUT/data-bin/dict.txt" \
    "$OUT/data-bin"/{train,valid,test}.document-summary.{document,summary}.{bin,idx} -- \
    python -m mass_tools.binarize --destdir "$OUT/data-bin" --langs document,summary \
    --dict "$PREP/data-bin/dict.txt" --subword-model "$model" --pair document-summary \
    --train "$OUT/work/sub/train" --valid "$OUT/work/sub/valid" --test "$OUT/work/sub/test" \
    --workers "$JOBS"
finish
echo "== done: $OUT/data-bin, references in $OUT/text/test.summary"
