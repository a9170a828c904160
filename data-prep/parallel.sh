#!/usr/bin/env bash
# Parallel text for the MASS paper's low-resource translation: the pair's WMT
# training text (Europarl; for en-ro, WMT16's Europarl v8 and SETIMES2),
# cleaned (no empty or over-long side, no sentence of the valid and test sets,
# no repeated pair) and sampled with a seed to 10k, 100k and 1M pairs, each
# sample inside the next. Each is tokenized and split with the subword model
# of news_crawl.sh and binarized with its dictionary, with the valid and test
# pairs of newstest.sh: OUT/para/N/data-bin (translation -s SRC -t TGT).
#   PAIR=en-fr bash data-prep/parallel.sh        # after news_crawl.sh, newstest.sh
# CORPORA: "URL|SRC_FILE|TGT_FILE ..." (files inside each .tgz/.zip, SRC_FILE
# in the first language of PAIR). A rerun skips what is done (OUT/.done).
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)
source "$SHELL_LIB/usage.sh"  # --help

PAIR=${PAIR:-en-fr}
OUT=${OUT:-work/paper/$PAIR}                # the news_crawl.sh + newstest.sh output
DOWNLOADS=${DOWNLOADS:-work/paper/downloads}
CORPORA=${CORPORA:-}                        # Europarl v7 (en-fr, en-de); v8 + SETIMES2 (en-ro)
SIZES=${SIZES:-}                            # 10000,100000,1000000 (en-ro: 10000,100000,all)
SEED=${SEED:-1}
MAX_WORDS=${MAX_WORDS:-175}                 # pairs with a longer side are dropped
JOBS=${JOBS:-$(nproc)}

source "$(dirname "$0")/lib.sh"
europarl=https://www.statmt.org/europarl/v7
case $PAIR in
    en-fr) corpora="$europarl/fr-en.tgz|europarl-v7.fr-en.en|europarl-v7.fr-en.fr" ;;
    en-de) corpora="$europarl/de-en.tgz|europarl-v7.de-en.en|europarl-v7.de-en.de" ;;
    en-ro) corpora="https://data.statmt.org/wmt16/translation-task/training-parallel-ep-v8.tgz"
           corpora+="|training-parallel-ep-v8/europarl-v8.ro-en.en"
           corpora+="|training-parallel-ep-v8/europarl-v8.ro-en.ro"
           corpora+=" https://object.pouta.csc.fi/OPUS-SETIMES/v2/moses/en-ro.txt.zip"
           corpora+="|SETIMES.en-ro.en|SETIMES.en-ro.ro" ;;
    *) corpora="" ;;
esac
[ "$PAIR" = en-ro ] && sizes=10000,100000,all || sizes=10000,100000,1000000
: "${CORPORA:=$corpora}" "${SIZES:=$sizes}"
src=${PAIR%-*} tgt=${PAIR#*-}
if [ -z "$CORPORA" ]; then
    echo "error: no default corpora for PAIR=$PAIR: set CORPORA" >&2
    exit 1
fi
if [ ! -f "$OUT/work/sub/test.$tgt" ] || [ ! -f "$OUT/data-bin/dict.txt" ]; then
    echo "error: $OUT has no test set in subwords: run data-prep/news_crawl.sh and" \
         "data-prep/newstest.sh with OUT=$OUT first" >&2
    exit 1
fi
model=$(subword_model "$OUT")
mapfile -t made < <(made_with "$OUT")
check_settings "PAIR=$PAIR" "CORPORA=$CORPORA" "SIZES=$SIZES" "SEED=$SEED" \
    "MAX_WORDS=$MAX_WORDS" "${made[@]}"
IFS=, read -r -a sizes <<< "$SIZES"

corpus_args=()
for corpus in $CORPORA; do
    IFS='|' read -r url src_file tgt_file <<< "$corpus"
    archive="$DOWNLOADS/parallel/$(echo "${url#*://*/}" | tr / _)"
    python -m mass_tools.download "$url" "$archive" > /dev/null
    corpus_args+=(--corpus "$archive" "$src_file" "$tgt_file")
done

samples=()
for size in "${sizes[@]}"; do samples+=("$OUT/para/$size"/train.{"$src","$tgt"}); done
step "sample.$PAIR" "${samples[@]}" -- python -m mass_tools.sample_pairs --pair "$PAIR" \
    "${corpus_args[@]}" --sizes "$SIZES" --seed "$SEED" --max-words "$MAX_WORDS" \
    --outdir "$OUT/para" --exclude "$OUT"/ref/{valid,test}.{"$src","$tgt"}

for size in "${sizes[@]}"; do
    work="$OUT/work/para/$size"
    for lang in "$src" "$tgt"; do
        subword_steps "para.$size.$lang" "$model" "$lang" "$OUT/para/$size/train.$lang" \
            "$work" "train.$lang"
    done
    data_bin="$OUT/para/$size/data-bin"
    step "binarize.para.$size" "$data_bin/dict.txt" \
        "$data_bin"/{train,valid,test}."$PAIR".{"$src","$tgt"}.{bin,idx} -- \
        python -m mass_tools.binarize --destdir "$data_bin" --langs "$src,$tgt" \
        --dict "$OUT/data-bin/dict.txt" --subword-model "$model" --pair "$PAIR" \
        --train "$work/sub/train" --valid "$OUT/work/sub/valid" --test "$OUT/work/sub/test" \
        --workers "$JOBS"
done
finish
echo "== done: $OUT/para/{${SIZES}}/data-bin"
