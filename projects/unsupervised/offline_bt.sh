#!/usr/bin/env bash
# Unsupervised NMT by offline iterative back-translation, from a cross-lingual
# MASS checkpoint (masked_s2s --langs L1,L2), with no parallel training data.
#
# Round 0 scores the checkpoint itself. Round r = 1..ROUNDS:
#   1. the round r-1 models (round 0: the checkpoint, in both directions)
#      translate MONO_LINES monolingual sentences of each language with
#      fairseq-generate (beam GEN_BEAM), a new slice of the text every round
#      (GEN_ENGINE=ctranslate2: from round 2, the CTranslate2 export of the
#      models, int8 by default, about 3.5x faster on a CPU);
#      with LEXICON (projects/unsupervised/induce_lexicon.py, L1 words then L2 words,
#      or the PREFIX of its --one-way files PREFIX.L1-L2.tsv and PREFIX.L2-L1.tsv)
#      round 0 is word-by-word translation with it instead
#      (projects/unsupervised/translate_words.py; SPM_MODEL, the sentencepiece model of
#      MONO_PREFIX, joins and splits the pieces), as in Lample et al. (2018);
#   2. the synthetic pairs (model output as source, real sentence as target)
#      are binarized with the shared dictionary;
#   3. each direction is fine-tuned on its pairs (task translation), starting
#      from its round r-1 model, MAX_UPDATE updates, best checkpoint by
#      validation loss on the real parallel valid set;
#   4. each direction translates the real test set, scored with sacreBLEU.
# Results: $WORK_DIR/results.tsv (round, direction, BLEU, chrF, minutes) and,
# after each round, $WORK_DIR/rounds.csv (python -m projects.unsupervised.rounds_table): one
# row per round in the columns of projects/unsupervised/results.csv, with the p-value of
# sacreBLEU's paired bootstrap against round 0 and the share of each
# direction's output in its target language.
# Interrupted? Run the same command again: finished rounds and steps are
# kept, an interrupted fine-tuning resumes from its checkpoint_last.pt.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

DATA_BIN=${DATA_BIN:?set DATA_BIN to binarize.py output with dict.txt and the valid/test pairs}
MONO_PREFIX=${MONO_PREFIX:?set MONO_PREFIX: MONO_PREFIX.L1 and MONO_PREFIX.L2 hold monolingual text split into subwords}
PRETRAINED=${PRETRAINED:?set PRETRAINED to a cross-lingual MASS checkpoint (masked_s2s --langs L1,L2)}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
L1=${L1:-en}
L2=${L2:-fr}
WORK_DIR=${WORK_DIR:-work/unsup-offline}
ROUNDS=${ROUNDS:-3}
MONO_LINES=${MONO_LINES:-100000}           # sentences per language and round
GEN_BEAM=${GEN_BEAM:-1}                    # beam for back-translation
GEN_BATCH=${GEN_BATCH:-128}
GEN_ENGINE=${GEN_ENGINE:-fairseq}          # or ctranslate2: rounds 2.. back-translate with the
                                           # CTranslate2 export of the last round's models
CT2_COMPUTE_TYPE=${CT2_COMPUTE_TYPE:-int8} # with ctranslate2: int8, float32, ...
MAX_UPDATE=${MAX_UPDATE:-2000}             # per round and direction
MAX_TOKENS=${MAX_TOKENS:-4096}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$MAX_TOKENS}
LR=${LR:-0.0001}
WARMUP=${WARMUP:-100}
TEST_SUBSET=${TEST_SUBSET:-test}
MODEL_ARGS=${MODEL_ARGS:-}                 # must match the pre-trained model
LEXICON=${LEXICON:-}                       # round 0: word by word with this lexicon, or
                                           # with induce_lexicon.py's --one-way PREFIX
SPM_MODEL=${SPM_MODEL:-}                   # with LEXICON: the model of MONO_PREFIX
MIN_SCORE=${MIN_SCORE-0.1}                 # with LEXICON: weaker word pairs stay untranslated
                                           # (MIN_SCORE= : every pair of the lexicon)
SYSTEM=${SYSTEM:-$([ -n "$LEXICON" ] && echo words_then_bt || echo mass_then_bt)}  # rounds.csv

source "$SHELL_LIB/common.sh"
recipes=$(dirname "$0")/../../examples  # the stage recipes
for lang in "$L1" "$L2"; do
    for file in "$MONO_PREFIX.$lang" "$REFERENCE_PREFIX.$lang"; do
        [ -s "$file" ] || { echo "error: $file is missing or empty" >&2; exit 1; }
    done
done
[ -f "$PRETRAINED" ] || { echo "error: PRETRAINED=$PRETRAINED: no such file" >&2; exit 1; }
[ -f "$DATA_BIN/dict.txt" ] || { echo "error: $DATA_BIN/dict.txt: no such file" >&2; exit 1; }
if [ -n "$LEXICON" ]; then
    if [ -f "$LEXICON" ]; then
        [ -s "$LEXICON" ] || { echo "error: LEXICON=$LEXICON is empty (make it with projects/unsupervised/induce_lexicon.py)" >&2; exit 1; }
    else
        for direction in "$L1-$L2" "$L2-$L1"; do
            [ -s "$LEXICON.$direction.tsv" ] || { echo "error: LEXICON=$LEXICON is neither a lexicon file nor the --one-way prefix of one: $LEXICON.$direction.tsv is missing or empty (make them with projects/unsupervised/induce_lexicon.py)" >&2; exit 1; }
        done
    fi
    [ -f "$SPM_MODEL" ] || { echo "error: LEXICON needs SPM_MODEL, the sentencepiece model of MONO_PREFIX (got '$SPM_MODEL')" >&2; exit 1; }
fi
mkdir -p "$WORK_DIR"
results=$WORK_DIR/results.tsv
[ -f "$results" ] || printf 'round\tdirection\tBLEU\tchrF\tminutes\n' > "$results"

checkpoint() {  # the model of direction $2 after round $1
    if [ "$1" -eq 0 ]; then echo "$PRETRAINED"
    else echo "$WORK_DIR/round$1/ckpt-$2/checkpoint_best.pt"; fi
}

done_already() { grep -q "^$1	$2	" "$results"; }

translate_words() {  # src, tgt, then translate_words.py's options: word by word with LEXICON
    local options=(--lexicon "$LEXICON.$1-$2.tsv")  # induce_lexicon.py --one-way
    if [ -f "$LEXICON" ]; then  # mutual pairs, L1 words first
        options=(--lexicon "$LEXICON")
        [ "$1" = "$L2" ] && options+=(--reverse)
    fi
    [ -n "$MIN_SCORE" ] && options+=(--min-score "$MIN_SCORE")
    python -m projects.unsupervised.translate_words "${options[@]}" \
        --src-lang "$1" --tgt-lang "$2" "${@:3}"
}

score_words() {  # src, tgt: round 0 with LEXICON, the word-by-word translation
    local out=$WORK_DIR/round0.$TEST_SUBSET.$1-$2.txt scores row
    translate_words "$1" "$2" --input "$REFERENCE_PREFIX.$1" --output "$out"
    scores=$(sacrebleu "$REFERENCE_PREFIX.$2" -i "$out" -m bleu chrf -w 2 -f text)
    echo "== $1->$2 word by word: $scores" >&2
    row=$(bleu_chrf <<< "$scores")
    printf '0\t%s\t%s\t0\n' "$1-$2" "$row" >> "$results"
}

score() {  # round, src, tgt, data directory with the test pair, minutes so far
    local round=$1 src=$2 tgt=$3 data=$4 minutes=$5 start=$SECONDS scores row
    scores=$(DATA_BIN=$data CHECKPOINT=$(checkpoint "$round" "$src-$tgt") SRC=$src TGT=$tgt \
        SUBSET=$TEST_SUBSET REFERENCE=$REFERENCE_PREFIX.$tgt \
        OUTPUT=$WORK_DIR/round$round.$TEST_SUBSET.$src-$tgt.txt bash "$recipes/generate.sh")
    echo "$scores" >&2
    row=$(bleu_chrf <<< "$scores")
    minutes=$(( minutes + (SECONDS - start + 30) / 60 ))
    printf '%s\t%s\t%s\t%s\n' "$round" "$src-$tgt" "$row" "$minutes" >> "$results"
}

# one slice of MONO_LINES lines per round, wrapping around at the end of the file
mono_slice() {  # lang, round, output
    local total
    total=$(wc -l < "$MONO_PREFIX.$1")
    awk -v first=$(( ($2 - 1) * MONO_LINES % total )) -v n="$MONO_LINES" -v total="$total" \
        '{ i = (NR - 1 - first + total) % total } i < n' "$MONO_PREFIX.$1" > "$3"
}

ct2_translate() {  # model, src, tgt, dir: dir/pairs.tsv from dir/mono.src with CTranslate2
    local model=$1 src=$2 tgt=$3 dir=$4
    echo "== round $round: translating $MONO_LINES $src sentences into $tgt with $model" \
        "(CTranslate2, $CT2_COMPUTE_TYPE)"
    python -m mass_plugin.export --checkpoint "$model" --data-bin "$DATA_BIN" \
        --source-lang "$src" --target-lang "$tgt" --output "$dir/export/model.pt" \
        --ctranslate2 "$dir/ct2" > "$dir/export.log"
    # the same beam and length limit as fairseq-generate below, on a GPU where there is one
    python -m mass_tools.translate_ct2 --model "$dir/ct2" --pieces --beam "$GEN_BEAM" \
        --device "$(ct2_device)" \
        --batch-size "$GEN_BATCH" --max-len-a 1.3 --max-len-b 5 \
        --compute-type "$CT2_COMPUTE_TYPE" --input "$dir/mono.$src" \
        --output "$dir/synthetic.$tgt" 2> "$dir/translate.log"
    # synthetic <tab> real, in the order of the slice
    paste "$dir/synthetic.$tgt" "$dir/mono.$src" > "$dir/pairs.tsv"
}

back_translate() {  # round, model direction src-tgt: writes synthetic tgt for real src
    local round=$1 src=${2%-*} tgt=${2#*-} dir=$WORK_DIR/round$1/gen-$2
    [ -f "$dir/pairs.$tgt" ] && return
    rm -rf "$dir" && mkdir -p "$dir"
    mono_slice "$src" "$round" "$dir/mono.$src"
    if [ -n "$LEXICON" ] && [ "$round" -eq 1 ]; then
        echo "== round $round: translating $MONO_LINES $src sentences into $tgt word by word"
        translate_words "$src" "$tgt" --spm-model "$SPM_MODEL" --input "$dir/mono.$src" \
            --output "$dir/words.$tgt"
        # synthetic <tab> real, in the order of the slice
        paste "$dir/words.$tgt" "$dir/mono.$src" > "$dir/pairs.tsv"
    elif [ "$GEN_ENGINE" = ctranslate2 ] && [ "$round" -gt 1 ]; then
        ct2_translate "$(checkpoint $(( round - 1 )) "$2")" "$src" "$tgt" "$dir"
    else
        local model
        model=$(checkpoint $(( round - 1 )) "$2")
        echo "== round $round: translating $MONO_LINES $src sentences into $tgt with $model"
        fairseq-preprocess --only-source -s "$src" -t "$tgt" --srcdict "$DATA_BIN/dict.txt" \
            --testpref "$dir/mono" --destdir "$dir/bin" --workers 2 > "$dir/preprocess.log"
        cp "$DATA_BIN/dict.txt" "$dir/bin/dict.$tgt.txt"
        # shellcheck disable=SC2046
        fairseq-generate "$dir/bin" --user-dir "$USER_DIR" --task translation -s "$src" \
            -t "$tgt" --gen-subset test --path "$model" \
            --beam "$GEN_BEAM" --batch-size "$GEN_BATCH" --required-batch-size-multiple 1 \
            --max-len-a 1.3 --max-len-b 5 --skip-invalid-size-inputs-valid-test \
            $(decode_device_args) > "$dir/generate.log"
        # id <tab> subword hypothesis, next to its real sentence
        grep -P '^H-[0-9]+\t' "$dir/generate.log" | sed 's/^H-//' | cut -f1,3 \
            | sort -n -k1,1 | awk -F '\t' -v real="$dir/mono.$src" '
                BEGIN { while ((getline line < real) > 0) text[n++] = line }
                { print $2 "\t" text[$1] }' > "$dir/pairs.tsv"
    fi
    # keep the pairs with a non-empty translation
    awk -F '\t' -v out="$dir/pairs" -v s="$src" -v t="$tgt" \
        '$1 != "" { print $1 > (out ".tmp." t); print $2 > (out ".tmp." s) }' "$dir/pairs.tsv"
    [ -s "$dir/pairs.tmp.$tgt" ] || { echo "error: no translations in $dir" >&2; exit 1; }
    mv "$dir/pairs.tmp.$src" "$dir/pairs.$src"
    mv "$dir/pairs.tmp.$tgt" "$dir/pairs.$tgt"
    echo "   $(wc -l < "$dir/pairs.$tgt") synthetic pairs"
}

train_direction() {  # round, src, tgt
    local round=$1 src=$2 tgt=$3 dir=$WORK_DIR/round$1 start=$SECONDS
    # pairs: the src side was generated by the tgt->src model from real tgt text
    local pairs=$dir/gen-$tgt-$src/pairs data=$dir/bin-$src-$tgt
    if [ ! -f "$data/dict.txt" ]; then
        python -m mass_tools.binarize --destdir "$data" --dict "$DATA_BIN/dict.txt" \
            --langs "$src,$tgt" --pair "$src-$tgt" --train "$pairs" --workers 2
        for name in "$DATA_BIN"/valid.*-*.* "$DATA_BIN/$TEST_SUBSET".*-*.*; do
            ln -sf "$(realpath "$name")" "$data/"
        done
    fi
    if [ -f "$dir/ckpt-$src-$tgt/done" ]; then  # trained before, only its score is missing
        echo "== round $round: $src->$tgt trained before, scoring it"
    else  # a run stopped half-way resumes from its checkpoint_last.pt
        echo "== round $round: fine-tuning $src->$tgt on $(wc -l < "$pairs.$src") synthetic pairs"
        DATA_BIN=$data PRETRAINED=$(checkpoint $(( round - 1 )) "$src-$tgt") \
            SAVE_DIR=$dir/ckpt-$src-$tgt SRC=$src TGT=$tgt MAX_TOKENS=$MAX_TOKENS \
            TOKENS_PER_UPDATE=$TOKENS_PER_UPDATE LR=$LR WARMUP=$WARMUP MAX_UPDATE=$MAX_UPDATE \
            PATIENCE=1000 EXTRA_ARGS="--language-embeddings $L1,$L2 $MODEL_ARGS" \
            bash "$recipes/finetune_nmt.sh" > "$dir/train-$src-$tgt.log"
        touch "$dir/ckpt-$src-$tgt/done"
    fi
    grep -P '\| valid on' "$dir/train-$src-$tgt.log" | tail -n 1 >&2 || true
    score "$round" "$src" "$tgt" "$data" $(( (SECONDS - start) / 60 + gen_minutes ))
}

for direction in "$L1-$L2" "$L2-$L1"; do
    done_already 0 "$direction" && continue
    if [ -n "$LEXICON" ]; then
        score_words "${direction%-*}" "${direction#*-}"
    else
        score 0 "${direction%-*}" "${direction#*-}" "$DATA_BIN" 0
    fi
done
summarize() {  # rounds.csv from results.tsv; its last row on stdout
    python -m projects.unsupervised.rounds_table \
        --work-dir "$WORK_DIR" --langs "$L1,$L2" --reference-prefix "$REFERENCE_PREFIX" \
        --subset "$TEST_SUBSET" --system "$SYSTEM" --updates-per-round "$MAX_UPDATE" \
        | tail -n 1 | sed 's/^/== rounds.csv: /'
}

summarize
for round in $(seq 1 "$ROUNDS"); do
    if done_already "$round" "$L1-$L2" && done_already "$round" "$L2-$L1"; then
        echo "== round $round: done, skipping"
        continue
    fi
    start=$SECONDS
    back_translate "$round" "$L1-$L2"
    back_translate "$round" "$L2-$L1"
    gen_minutes=$(( (SECONDS - start) / 60 / 2 ))  # each direction's share
    for direction in "$L1-$L2" "$L2-$L1"; do
        done_already "$round" "$direction" \
            || train_direction "$round" "${direction%-*}" "${direction#*-}"
    done
    summarize
done
column -t -s $'\t' "$results"
column -t -s , "$WORK_DIR/rounds.csv"
