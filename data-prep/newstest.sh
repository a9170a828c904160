#!/usr/bin/env bash
# The MASS paper's validation and test sets of a pair, through sacrebleu:
# newstest2013 / newstest2014 (en-fr), newstest2015 / newstest2016 (en-de),
# newsdev2016 / newstest2016 (en-ro). Both sides are tokenized and split with
# the subword model of a news_crawl.sh run into the same OUT and binarized with
# its dictionary: OUT/data-bin/{valid,test}.SRC-TGT.{SRC,TGT}, either
# direction. The untokenized text stays in OUT/ref/{valid,test}.{SRC,TGT}:
# score detokenized output against it. sacrebleu downloads (and checks the
# MD5 of) its files into $SACREBLEU (default ~/.sacrebleu).
#   PAIR=en-fr bash data-prep/newstest.sh        # after LANGS=en,fr news_crawl.sh
set -euo pipefail
source "$(python -m mass_tools.shell)/usage.sh"  # --help

PAIR=${PAIR:-en-fr}
OUT=${OUT:-work/paper/$PAIR}                # the news_crawl.sh output of the pair
VALID_SET=${VALID_SET:-}                    # default by PAIR, see below
TEST_SET=${TEST_SET:-}                      # default by PAIR, see below
JOBS=${JOBS:-$(nproc)}

source "$(dirname "$0")/lib.sh"
case $PAIR in  # sacrebleu's names of the paper's sets
    en-fr|fr-en) defaults=(wmt13 wmt14/full) ;;
    en-de|de-en) defaults=(wmt15 wmt16) ;;
    en-ro|ro-en) defaults=(wmt16/dev wmt16) ;;
    *) defaults=("" "") ;;
esac
: "${VALID_SET:=${defaults[0]}}" "${TEST_SET:=${defaults[1]}}"
if [ -z "$VALID_SET" ] || [ -z "$TEST_SET" ]; then
    echo "error: no default test sets for PAIR=$PAIR: set VALID_SET and TEST_SET" \
         "(sacrebleu names, e.g. wmt14)" >&2
    exit 1
fi
if [ ! -f "$OUT/data-bin/dict.txt" ]; then
    echo "error: $OUT/data-bin/dict.txt is missing: run data-prep/news_crawl.sh" \
         "with OUT=$OUT first (the test sets take its subwords and dictionary)" >&2
    exit 1
fi
model=$(subword_model "$OUT")
check_settings "PAIR=$PAIR VALID_SET=$VALID_SET TEST_SET=$TEST_SET"

step "references.$PAIR" python -m mass_tools.fetch_wmt --langs "" --pair "$PAIR" \
    --valid-set "$VALID_SET" --test-set "$TEST_SET" --outdir "$OUT/ref"
for split in valid test; do
    for lang in ${PAIR%-*} ${PAIR#*-}; do
        subword_steps "$split.$lang" "$model" "$lang" "$OUT/ref/$split.$lang" "$OUT/work" \
            "$split.$lang"
    done
done
step "binarize.$PAIR" python -m mass_tools.binarize --destdir "$OUT/data-bin" \
    --langs "${PAIR/-/,}" --dict "$OUT/data-bin/dict.txt" --pair "$PAIR" \
    --valid "$OUT/work/sub/valid" --test "$OUT/work/sub/test" --workers "$JOBS"
echo "== done: $OUT/data-bin/{valid,test}.$PAIR.*, references in $OUT/ref"
