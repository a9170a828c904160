#!/usr/bin/env bash
# WMT News Crawl monolingual text -> Moses tokens -> ONE joint BPE (subword-nmt)
# -> binarized pre-training data, as the MASS paper prepared it: all News Crawl
# 2007-2017 for en, fr and de, and what there is for ro (2015 on), sentences of
# more than 175 words dropped (and here, of fewer than 3), 60k BPE codes learnt
# on the languages of a pair.
#   LANGS=en,fr bash data-prep/news_crawl.sh      # then newstest.sh, parallel.sh
# Output in OUT: data-bin/ (dict.txt, train.LANG, valid.LANG: masked_s2s
# --langs LANGS) and bpe.codes (SUBWORDS=sentencepiece: spm.model, raw text).
# Downloads are kept in DOWNLOADS and shared by every OUT. A rerun skips what
# is done (OUT/.done: the outputs of each step, checked) and resumes a broken
# download; YEARS_XX sets the years of language xx (YEARS_RO=2015-2017).
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)
source "$SHELL_LIB/usage.sh"  # --help

LANGS=${LANGS:-en,fr}                       # pre-trained together, one BPE
OUT=${OUT:-work/paper/${LANGS//,/-}}
DOWNLOADS=${DOWNLOADS:-work/paper/downloads}
BASE_URL=${BASE_URL:-https://data.statmt.org/news-crawl}
YEARS=${YEARS:-2007-2017}                   # News Crawl years of every language
YEARS_RO=${YEARS_RO:-2015-2017}             # Romanian News Crawl starts in 2015
MAX_LINES=${MAX_LINES:-50000000}            # per language; 0: all (the paper)
VALID_LINES=${VALID_LINES:-5000}            # held out per language: valid.LANG
MIN_WORDS=${MIN_WORDS:-3}                   # shorter lines are dropped
MAX_WORDS=${MAX_WORDS:-175}                 # longer lines are dropped (the paper's)
SUBWORDS=${SUBWORDS:-bpe}                   # bpe (subword-nmt) or sentencepiece
CODES=${CODES:-60000}                       # BPE merges, or sentencepiece pieces
BPE_LINES=${BPE_LINES:-5000000}             # lines per language the codes learn on
JOBS=${JOBS:-$(nproc)}

source "$(dirname "$0")/lib.sh"
# every script in OUT encodes with this one's subwords and dictionary
REDO="delete $OUT/.done and $OUT/data-bin, then run the other scripts in $OUT again"
IFS=, read -r -a langs <<< "$LANGS"
case $SUBWORDS in
    bpe) model="$OUT/bpe.codes" ;;
    sentencepiece) model="$OUT/spm.model" ;;
    *) echo "error: SUBWORDS=$SUBWORDS: expected bpe or sentencepiece" >&2; exit 1 ;;
esac

years_of() {  # YEARS_XX for language xx where set, YEARS otherwise
    local var="YEARS_${1^^}"
    echo "${!var:-$YEARS}"
}

settings=("LANGS=$LANGS" "MAX_LINES=$MAX_LINES" "VALID_LINES=$VALID_LINES"
          "MIN_WORDS=$MIN_WORDS" "MAX_WORDS=$MAX_WORDS" "SUBWORDS=$SUBWORDS" "CODES=$CODES"
          "BPE_LINES=$BPE_LINES")
for lang in "${langs[@]}"; do settings+=("YEARS_${lang^^}=$(years_of "$lang")"); done
check_settings "${settings[@]}"

text="$OUT/work/text"
for lang in "${langs[@]}"; do
    step "fetch.$lang" "$text/mono.$lang" "$text/mono.valid.$lang" -- \
        python -m mass_tools.fetch_wmt --langs "$lang" --years "$(years_of "$lang")" \
        --base-url "$BASE_URL" --download-dir "$DOWNLOADS/news-crawl" --outdir "$text" \
        --max-lines "$MAX_LINES" --valid-lines "$VALID_LINES" --min-words "$MIN_WORDS" \
        --max-words "$MAX_WORDS"
done

for lang in "${langs[@]}"; do
    if [ "$SUBWORDS" = bpe ]; then
        step "mono.$lang.tokenize" "$OUT/work/tok/mono.$lang" -- in_parallel \
            "tokenizing mono.$lang" "$text/mono.$lang" "$OUT/work/tok/mono.$lang" \
            python -m mass_tools.tokenize_moses --lang "$lang"
    fi
done

learn_model() {  # on the first lines of each language: the files are shuffled
    local samples=() lang text
    mkdir -p "$OUT/work/sample"
    for lang in "${langs[@]}"; do
        text="$OUT/work/text/mono.$lang"
        [ "$SUBWORDS" = bpe ] && text="$OUT/work/tok/mono.$lang"
        head -n "$BPE_LINES" "$text" > "$OUT/work/sample/mono.$lang"
        samples+=("$OUT/work/sample/mono.$lang")
    done
    python -m mass_tools.learn_subwords --method "$SUBWORDS" --vocab-size "$CODES" \
        --max-lines-per-language "$BPE_LINES" --threads "$JOBS" \
        --output "${model%.*}" "${samples[@]}"
}
step learn_subwords "$model" -- learn_model

for lang in "${langs[@]}"; do
    # mono.LANG was tokenized above for the codes: its step is met again, not run
    for split in mono mono.valid; do
        subword_steps "$split.$lang" "$model" "$lang" "$OUT/work/text/$split.$lang" \
            "$OUT/work" "$split.$lang"
    done
done

binarized=("$OUT/data-bin/dict.txt")
for lang in "${langs[@]}"; do
    binarized+=("$OUT/data-bin/dict.$lang.txt" "$OUT/data-bin"/{train,valid}."$lang".{bin,idx})
done
step binarize "${binarized[@]}" -- python -m mass_tools.binarize --destdir "$OUT/data-bin" \
    --langs "$LANGS" --mono-train "$OUT/work/sub/mono.{lang}" \
    --mono-valid "$OUT/work/sub/mono.valid.{lang}" --subword-model "$model" --workers "$JOBS"
finish
echo "== done: $OUT/data-bin, $model"
