#!/usr/bin/env bash
# The MASS paper's validation and test sets of a pair, through sacrebleu:
# newstest2013 / newstest2014 (en-fr), newstest2015 / newstest2016 (en-de),
# newsdev2016 / newstest2016 (en-ro). Both sides are tokenized and split with
# the subword model of a news_crawl.sh run into the same OUT and binarized with
# its dictionary: OUT/data-bin/{valid,test}.SRC-TGT.{SRC,TGT}, either
# direction. The untokenized text stays in OUT/ref/{valid,test}.{SRC,TGT}:
# score detokenized output against it. sacrebleu downloads (and checks the
# MD5 of) its files into $SACREBLEU (default ~/.sacrebleu). A rerun skips
# what is done; after a new dictionary or subword model of news_crawl.sh,
# a finished run stops and says so.
#   PAIR=en-fr bash data-prep/newstest.sh        # after LANGS=en,fr news_crawl.sh
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)
source "$SHELL_LIB/usage.sh"  # --help

PAIR=${PAIR:-en-fr}
OUT=${OUT:-work/paper/$PAIR}                # the news_crawl.sh output of the pair
VALID_SET=${VALID_SET:-}                    # wmt13 (en-fr), wmt15 (en-de), wmt16/dev (en-ro)
TEST_SET=${TEST_SET:-}                      # wmt14/full (en-fr), wmt16 (en-de, en-ro)
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
mapfile -t made < <(made_with "$OUT")
check_settings "PAIR=$PAIR" "VALID_SET=$VALID_SET" "TEST_SET=$TEST_SET" "${made[@]}"

src=${PAIR%-*} tgt=${PAIR#*-}
step "references.$PAIR" "$OUT/ref"/{valid,test}.{"$src","$tgt"} -- python -m mass_tools.fetch_wmt \
    --langs "" --pair "$PAIR" --valid-set "$VALID_SET" --test-set "$TEST_SET" --outdir "$OUT/ref"
for split in valid test; do
    for lang in "$src" "$tgt"; do
        subword_steps "$split.$lang" "$model" "$lang" "$OUT/ref/$split.$lang" "$OUT/work" \
            "$split.$lang"
    done
done
step "binarize.$PAIR" "$OUT/data-bin"/{valid,test}."$PAIR".{"$src","$tgt"}.{bin,idx} -- \
    python -m mass_tools.binarize --destdir "$OUT/data-bin" --langs "$src,$tgt" \
    --dict "$OUT/data-bin/dict.txt" --subword-model "$model" --pair "$PAIR" \
    --valid "$OUT/work/sub/valid" --test "$OUT/work/sub/test" --workers "$JOBS"
finish
echo "== done: $OUT/data-bin/{valid,test}.$PAIR.*, references in $OUT/ref"
