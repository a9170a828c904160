#!/usr/bin/env bash
# Unsupervised translation by word-by-word translation repaired by a model of
# the target language (Kim et al., 2018), with no parallel training text.
#
# Round 0 translates the test set word by word with LEXICON, the --one-way
# PREFIX of projects/unsupervised/induce_lexicon.py (PREFIX.L1-L2.tsv, PREFIX.L2-L1.tsv),
# each run of words the lexicon lacks as a placeholder. Round r = 1..ROUNDS:
#   1. repair pairs for each language from its monolingual text
#      (projects/unsupervised/model_round_trip_pairs.py): each line next to its translation into
#      the other language and back, word by word both ways in round 1
#      (plus denoising_pairs.py's shuffled and thinned copies), and in later rounds
#      word by word there, repaired by the round r-1 model (with
#      fairseq-generate; GEN_ENGINE=ctranslate2 decodes every repair with
#      CTranslate2 instead, int8 unless CT2_COMPUTE_TYPE says otherwise: the
#      same valid BLEU, about 3x faster on a CPU),
#      and word by word back, so that the way back meets the other language as
#      a model writes it; later rounds also add round trips whose way there
#      draws the SAMPLE_WORDS most frequent words' translations from the
#      lexicon's candidates (LEXICON.L1-L2.candidates.tsv, induce_lexicon.py
#      --candidates; translate_words.py --sample), so that "the" comes back
#      as "a" where French "le" would (SAMPLE_WORDS=0: none);
#      later rounds train on these round trips alone (KEEP_ROUND1_PAIRS=1:
#      and on round 1's pairs of MONO_PREFIX again);
#      (EXTRA_MONO_PREFIX.L1 and .L2, more text such as web text: round 1
#      adds their round trips through the lexicon too);
#   2. one model for both languages (fairseq's translation task, noisy ->
#      clean) trains on them, round 1 from scratch (FIRST_UPDATES; with
#      DAE_UPDATES > 0 from a model first trained that long on the shuffled,
#      thinned copies alone), later rounds from the last one (UPDATES);
#   3. each direction's test set (and VALID_PREFIX's, to choose a round by):
#      word by word with placeholders, repaired (beam SCORE_BEAM, NBEST hypotheses),
#      the placeholders restored (projects/unsupervised/restore_placeholders.py; a line
#      that lost one falls back to word by word), scored with sacreBLEU.
# Results: $WORK_DIR/results.tsv (round, direction, BLEU, chrF, minutes),
# $WORK_DIR/valid.tsv (the same on the valid set) and, after each round,
# $WORK_DIR/rounds.csv (python -m projects.unsupervised.rounds_table: the columns of
# projects/unsupervised/results.csv, the paired bootstrap against word by word, the
# output's language shares). With VALID_PREFIX, the round with the best mean
# valid BLEU so far (python -m projects.unsupervised.choose_round; the test set plays no
# part) is linked as $WORK_DIR/best.pt and named at the end, and PATIENCE > 0
# stops the rounds once that many have passed without a better one.
# Interrupted? Run the same command again: finished steps are kept, and an
# interrupted training resumes from its checkpoint_last.pt.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

MONO_PREFIX=${MONO_PREFIX:?set MONO_PREFIX: MONO_PREFIX.L1 and MONO_PREFIX.L2 hold raw monolingual text}
LEXICON=${LEXICON:?set LEXICON to the --one-way PREFIX of projects/unsupervised/induce_lexicon.py}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
VALID_PREFIX=${VALID_PREFIX:-}             # raw valid pairs, scored each round as well
EXTRA_MONO_PREFIX=${EXTRA_MONO_PREFIX:-}   # more raw text for round 1's lexicon round trips
L1=${L1:-en}
L2=${L2:-fr}
WORK_DIR=${WORK_DIR:-work/unsup-repair}
ROUNDS=${ROUNDS:-2}
MIN_SCORE_L1_L2=${MIN_SCORE_L1_L2:-0.1}    # weaker word pairs L1->L2 stay untranslated
MIN_SCORE_L2_L1=${MIN_SCORE_L2_L1:-0.05}
SPM_VOCAB=${SPM_VOCAB:-8000}
FIRST_UPDATES=${FIRST_UPDATES:-4000}       # round 1 (from scratch unless DAE_UPDATES)
DAE_UPDATES=${DAE_UPDATES:-0}              # a denoising model first, round 1 goes on from it
UPDATES=${UPDATES:-500}                    # each later round
MAX_TOKENS=${MAX_TOKENS:-4096}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$MAX_TOKENS}
LR=${LR:-0.0005}
BEAM=${BEAM:-5}                            # each round trip's repairs
SCORE_BEAM=${SCORE_BEAM:-$BEAM}            # the test and valid sets' repairs
NBEST=${NBEST:-5}                          # hypotheses searched for the placeholders
MODEL_ARGS=${MODEL_ARGS:---arch transformer --encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256 --decoder-embed-dim 256 --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 --encoder-attention-heads 4 --decoder-attention-heads 4 --share-all-embeddings --dropout 0.1}
SYSTEM=${SYSTEM:-words_then_repair}        # rounds.csv's system column
GEN_ENGINE=${GEN_ENGINE:-fairseq}          # or ctranslate2: every repair decoded by CTranslate2
CT2_COMPUTE_TYPE=${CT2_COMPUTE_TYPE:-int8} # with ctranslate2: int8, float32, ...
SAMPLE_WORDS=${SAMPLE_WORDS:-150}          # words drawn from the candidates from round 2 on
KEEP_ROUND1_PAIRS=${KEEP_ROUND1_PAIRS:-0}  # 1: later rounds add round 1's pairs again
PATIENCE=${PATIENCE:-0}                    # stop after this many rounds with no better valid BLEU

source "$SHELL_LIB/common.sh"
for file in "$MONO_PREFIX.$L1" "$MONO_PREFIX.$L2" "$REFERENCE_PREFIX.$L1" "$REFERENCE_PREFIX.$L2" \
        "$LEXICON.$L1-$L2.tsv" "$LEXICON.$L2-$L1.tsv" \
        ${VALID_PREFIX:+"$VALID_PREFIX.$L1" "$VALID_PREFIX.$L2"} \
        ${EXTRA_MONO_PREFIX:+"$EXTRA_MONO_PREFIX.$L1" "$EXTRA_MONO_PREFIX.$L2"}; do
    [ -s "$file" ] || { echo "error: $file is missing or empty" >&2; exit 1; }
done
for lang in "$L1-$L2" "$L2-$L1"; do
    (( SAMPLE_WORDS == 0 || ROUNDS < 2 )) || [ -s "$LEXICON.$lang.candidates.tsv" ] || {
        echo "error: $LEXICON.$lang.candidates.tsv is missing: make it with" \
            "projects/unsupervised/induce_lexicon.py --one-way $LEXICON --candidates 5, or set" \
            "SAMPLE_WORDS=0" >&2; exit 1; }
done
(( NBEST <= SCORE_BEAM )) || {
    echo "error: NBEST=$NBEST exceeds SCORE_BEAM=$SCORE_BEAM (which is BEAM unless set)" >&2
    exit 1; }
[[ $KEEP_ROUND1_PAIRS =~ ^[01]$ ]] || {
    echo "error: KEEP_ROUND1_PAIRS=$KEEP_ROUND1_PAIRS: give 1 (later rounds add round 1's" \
        "pairs) or 0 (they do not)" >&2; exit 1; }
[[ $DAE_UPDATES =~ ^[0-9]+$ ]] || {
    echo "error: DAE_UPDATES=$DAE_UPDATES: give a number of updates (0: no denoising model)" >&2
    exit 1; }
[[ $PATIENCE =~ ^[0-9]+$ ]] || {
    echo "error: PATIENCE=$PATIENCE: give a number of rounds (0: run all ROUNDS)" >&2; exit 1; }
(( PATIENCE == 0 )) || [ -n "$VALID_PREFIX" ] || {
    echo "error: PATIENCE=$PATIENCE needs VALID_PREFIX, the valid pairs that choose the round" \
        >&2; exit 1; }
case $GEN_ENGINE in
    fairseq) ;;
    ctranslate2) python -c 'import ctranslate2' 2> /dev/null || {
        echo "error: GEN_ENGINE=ctranslate2 needs CTranslate2: pip install -e '.[serve]'" >&2
        exit 1; } ;;
    *) echo "error: GEN_ENGINE=$GEN_ENGINE: choose fairseq (fairseq-generate) or ctranslate2" >&2
       exit 1 ;;
esac
mkdir -p "$WORK_DIR"
W=$WORK_DIR P='~'  # the placeholder
for table in results valid; do
    [ -f "$W/$table.tsv" ] || printf 'round\tdirection\tBLEU\tchrF\tminutes\n' > "$W/$table.tsv"
done
minutes() {  # minutes of work so far, each direction's half (rounds.csv adds the two)
    echo $(( $(cat "$W/seconds" 2>/dev/null || echo 0) / 120 ))
}
spent() {  # add the seconds since $1 to the work done
    echo $(( $(cat "$W/seconds" 2>/dev/null || echo 0) + SECONDS - $1 )) > "$W/seconds"
}

min_score() { [ "$1" = "$L1" ] && echo "$MIN_SCORE_L1_L2" || echo "$MIN_SCORE_L2_L1"; }
other() { [ "$1" = "$L1" ] && echo "$L2" || echo "$L1"; }
words() {  # src, input, output[, option...]: word by word into the other language, runs it
    local tgt    # lacks as ~; the options go to translate_words.py
    tgt=$(other "$1")
    python -m projects.unsupervised.translate_words --lexicon "$LEXICON.$1-$tgt.tsv" \
        --min-score "$(min_score "$1")" --src-lang "$1" --tgt-lang "$tgt" \
        --input "$2" --output "$3" --placeholder "$P" --masked "$3.masked" "${@:4}"
}
pieces() { python -m mass_tools.apply_subwords --model "$W/spm.model" --input "$1" --output "$2"; }

repair() {  # model, language, input (text with ~), output[, nbest, beam]: the model's n-best,
    # best first (1 hypothesis, beam BEAM unless given)
    [ "$GEN_ENGINE" = ctranslate2 ] && { repair_ct2 "$@"; return; }
    local dir=$4.gen
    rm -rf "$dir" && mkdir -p "$dir"
    pieces "$3" "$dir/in.n$2"
    cp "$dir/in.n$2" "$dir/in.$2"  # fairseq-preprocess needs a target side
    fairseq-preprocess -s "n$2" -t "$2" --testpref "$dir/in" --srcdict "$W/dict.txt" \
        --tgtdict "$W/dict.txt" --destdir "$dir/bin" --workers 2 > "$dir/preprocess.log"
    # shellcheck disable=SC2046
    fairseq-generate "$dir/bin" --user-dir "$USER_DIR" --task translation -s "n$2" -t "$2" \
        --path "$1" --beam "${6:-$BEAM}" --nbest "${5:-1}" --batch-size 64 \
        --required-batch-size-multiple 1 --post-process sentencepiece --max-len-a 1.2 \
        --max-len-b 10 $(decode_device_args) > "$dir/generate.log" 2> "$dir/generate.err" \
        || { tail -n 20 "$dir/generate.err" >&2; exit 1; }
    grep -P '^D-[0-9]+\t' "$dir/generate.log" | sed 's/^D-//' | sort -s -n -k1,1 | cut -f3 \
        > "$4.tmp"
    mv "$4.tmp" "$4"
}

repair_ct2() {  # repair() with the model converted for CTranslate2 (once per checkpoint)
    local ct2
    ct2=$(dirname "$1")/ct2
    if [ ! "$ct2/model.bin" -nt "$1" ]; then
        rm -rf "$ct2" "$ct2.tmp"
        ct2-fairseq-converter --model_path "$1" --data_dir "$(dirname "$1")/../bin" \
            --source_lang noisy --target_lang clean --user_dir "$USER_DIR" \
            --output_dir "$ct2.tmp" > "$ct2.log" 2>&1 || { tail -n 20 "$ct2.log" >&2; exit 1; }
        mv "$ct2.tmp" "$ct2"
    fi
    python -m mass_tools.translate_ct2 --model "$ct2" --spm "$W/spm.model" --input "$3" \
        --output "$4.tmp" --beam "${6:-$BEAM}" --nbest "${5:-1}" --batch-size 64 --max-len-a 1.2 \
        --max-len-b 10 --compute-type "$CT2_COMPUTE_TYPE" --device "$(ct2_device)" 2> "$4.log" \
        || { tail -n 20 "$4.log" >&2; exit 1; }
    mv "$4.tmp" "$4"
}

subwords() {  # the joint sentencepiece model and its fairseq dictionary
    [ -f "$W/dict.txt" ] && return
    echo "== subwords: $SPM_VOCAB pieces over $MONO_PREFIX.{$L1,$L2}"
    # the placeholder is a piece of its own, and in the dictionary, text or no text
    python -m mass_tools.learn_subwords "$MONO_PREFIX.$L1" "$MONO_PREFIX.$L2" \
        --output "$W/spm" --vocab-size "$SPM_VOCAB" --symbols "$P" --threads 2 \
        > "$W/spm.log" 2>&1
    echo "$P" > "$W/placeholder.txt"
    rm -f "$W/mono.spm.all.tmp"
    for name in "$MONO_PREFIX.$L1" "$MONO_PREFIX.$L2" "$W/placeholder.txt"; do
        pieces "$name" "$W/pieces.tmp"
        cat "$W/pieces.tmp" >> "$W/mono.spm.all.tmp"
    done
    mv "$W/mono.spm.all.tmp" "$W/mono.spm.all"
    fairseq-preprocess --only-source --trainpref "$W/mono.spm.all" --destdir "$W/dict" \
        --workers 2 > "$W/dict.log"
    mv "$W/dict/dict.txt" "$W/dict.txt"
}

score() {  # round, src, split (test or valid), prefix: one row of results.tsv or valid.tsv
    local round=$1 src=$2 split=$3 prefix=$4 tgt out scores row table=$W/results.tsv
    tgt=$(other "$src")
    [ "$split" = valid ] && table=$W/valid.tsv
    grep -q "^$round	$src-$tgt	" "$table" && return
    out=$W/round$round.$split.$src-$tgt.txt
    [ -f "$W/words.$split.$src" ] || words "$src" "$prefix.$src" "$W/words.$split.$src"
    [ -f "$W/plain.$split.$src" ] || python -m projects.unsupervised.translate_words \
        --lexicon "$LEXICON.$src-$tgt.tsv" --min-score "$(min_score "$src")" --src-lang "$src" \
        --tgt-lang "$tgt" --input "$prefix.$src" --output "$W/plain.$split.$src"
    if [ "$round" -eq 0 ]; then
        cp "$W/plain.$split.$src" "$out"
    else
        repair "$W/round$round/ckpt/checkpoint_last.pt" "$tgt" "$W/words.$split.$src" \
            "$out.nbest" "$NBEST" "$SCORE_BEAM"
        python -m projects.unsupervised.restore_placeholders --input "$out.nbest" --nbest "$NBEST" \
            --masked "$W/words.$split.$src.masked" --placeholder "$P" \
            --fallback "$W/plain.$split.$src" --output "$out" 2> "$out.restore.log"
    fi
    scores=$(sacrebleu "$prefix.$tgt" -i "$out" -m bleu chrf -w 2 -f text)
    echo "== round $round $src->$tgt $split: $(cat "$out.restore.log" 2>/dev/null | tr '\n' ' ')"
    echo "$scores"
    row=$(bleu_chrf <<< "$scores")
    printf '%s\t%s\t%s\t%s\n' "$round" "$src-$tgt" "$row" "$(minutes)" >> "$table"
    SCORED=1
}

round_trip() {  # round, language, text in the other language, name[, text]: pairs name.n$2 /
    local dir=$W/round$1 lang=$2 other    # name.$2 (and in pieces, name.spm.*) of the text
    other=$(other "$lang")                # ($MONO_PREFIX.$2) with $3 translated back word by word
    words "$other" "$3" "$3.back"
    python -m projects.unsupervised.model_round_trip_pairs --input "${5:-$MONO_PREFIX.$lang}" --back "$3.back" \
        --lexicon "$LEXICON.$lang-$other.tsv" --min-score "$(min_score "$lang")" \
        --lang "$lang" --placeholder "$P" --output "$dir/$4" --noisy-suffix "n$lang" \
        --clean-suffix "$lang"
    pieces "$dir/$4.n$lang" "$dir/$4.spm.n$lang"
    pieces "$dir/$4.$lang" "$dir/$4.spm.$lang"
}

pairs() {  # round, language: $W/round$1/pairs.$2.{noisy,clean} in pieces
    local round=$1 lang=$2 dir=$W/round$1 other
    other=$(other "$lang")
    [ -f "$dir/pairs.$lang.clean" ] && return
    if [ "$round" -eq 1 ]; then
        echo "== round 1: $lang text to $other word by word and back"
    else
        echo "== round $round: $lang text to $other word by word, repaired by round" \
            "$(( round - 1 ))'s model, and back"
    fi
    if [ ! -f "$dir/model.$lang" ]; then  # kept when a round is resumed
        words "$lang" "$MONO_PREFIX.$lang" "$dir/there.$lang"
        if [ "$round" -eq 1 ]; then
            cp "$dir/there.$lang" "$dir/model.$lang.tmp"
            mv "$dir/model.$lang.tmp" "$dir/model.$lang"
        else
            repair "$W/round$(( round - 1 ))/ckpt/checkpoint_last.pt" "$other" \
                "$dir/there.$lang" "$dir/model.$lang"
        fi
    fi
    round_trip "$round" "$lang" "$dir/model.$lang" rt
    if [ "$round" -eq 1 ]; then  # and shuffled, thinned copies of every line
        python -m projects.unsupervised.denoising_pairs --input "$MONO_PREFIX.$lang" --output "$dir/dae" \
            --noisy-suffix "n$lang" --clean-suffix "$lang" --seed 1
        pieces "$dir/dae.n$lang" "$dir/dae.spm.n$lang"
        pieces "$dir/dae.$lang" "$dir/dae.spm.$lang"
        local parts=("$dir/rt.spm" "$dir/dae.spm")
        if [ -n "$EXTRA_MONO_PREFIX" ]; then  # and round trips of the extra text
            words "$lang" "$EXTRA_MONO_PREFIX.$lang" "$dir/extra.$lang"
            round_trip "$round" "$lang" "$dir/extra.$lang" ert "$EXTRA_MONO_PREFIX.$lang"
            parts+=("$dir/ert.spm")
        fi
        cat "${parts[@]/%/.n$lang}" > "$dir/pairs.$lang.noisy"
        cat "${parts[@]/%/.$lang}" > "$dir/pairs.$lang.clean.tmp"
    else  # the model's round trips twice (sampled round trips, round 1's pairs)
        local noisy=("$dir/rt.spm.n$lang" "$dir/rt.spm.n$lang") clean=("$dir/rt.spm.$lang"
                     "$dir/rt.spm.$lang")
        if [ "$SAMPLE_WORDS" -gt 0 ]; then
            words "$lang" "$MONO_PREFIX.$lang" "$dir/sampled.$lang" --seed "$round" \
                --sample "$LEXICON.$lang-$other.candidates.tsv" --sample-words "$SAMPLE_WORDS"
            round_trip "$round" "$lang" "$dir/sampled.$lang" srt
            noisy+=("$dir/srt.spm.n$lang")
            clean+=("$dir/srt.spm.$lang")
        fi
        if [ "$KEEP_ROUND1_PAIRS" = 1 ]; then  # round 1's pairs of $MONO_PREFIX (not
            noisy+=("$W"/round1/{rt,dae}.spm."n$lang")  # those of the extra text)
            clean+=("$W"/round1/{rt,dae}.spm."$lang")
        fi
        cat "${noisy[@]}" > "$dir/pairs.$lang.noisy"
        cat "${clean[@]}" > "$dir/pairs.$lang.clean.tmp"
    fi
    mv "$dir/pairs.$lang.clean.tmp" "$dir/pairs.$lang.clean"
}

train() {  # directory, updates, checkpoint to start from ("": none), label: one model of
    local dir=$1 updates=$2 restore=()  # both languages, noisy -> clean, on the pairs
    [ -f "$dir/ckpt/done" ] && return   # $dir/pairs.{L1,L2}.{noisy,clean}
    if [ ! -d "$dir/bin" ]; then
        for side in noisy clean; do
            cat "$dir/pairs.$L1.$side" "$dir/pairs.$L2.$side" > "$dir/all.$side"
            # a held-out slice of the pairs for fairseq's validation loss
            tail -n 200 "$dir/all.$side" > "$dir/heldout.$side"
            head -n -200 "$dir/all.$side" > "$dir/train.$side"
        done
        fairseq-preprocess -s noisy -t clean --trainpref "$dir/train" --validpref "$dir/heldout" \
            --srcdict "$W/dict.txt" --tgtdict "$W/dict.txt" --destdir "$dir/bin.tmp" \
            --workers 2 > "$dir/preprocess.log"
        mv "$dir/bin.tmp" "$dir/bin"
    fi
    if [ -n "$3" ] && [ ! -f "$dir/ckpt/checkpoint_last.pt" ]; then
        restore=(--restore-file "$3" --reset-optimizer --reset-dataloader --reset-meters
                 --reset-lr-scheduler)
    fi
    echo "== $4: training on $(wc -l < "$dir/train.noisy") pairs, $updates updates"
    # shellcheck disable=SC2086,SC2046
    fairseq-train "$dir/bin" --user-dir "$USER_DIR" --task translation -s noisy -t clean \
        $MODEL_ARGS --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
        --optimizer adam --adam-betas '(0.9, 0.98)' --lr "$LR" --lr-scheduler inverse_sqrt \
        --warmup-updates "$(( updates < 2000 ? updates / 2 : 500 ))" --max-tokens "$MAX_TOKENS" \
        --max-update "$updates" --save-dir "$dir/ckpt" --no-epoch-checkpoints \
        --save-interval-updates "$updates" --keep-interval-updates 1 --log-interval 50 \
        --num-workers 0 --seed 1 "${restore[@]}" $(device_args) > "$dir/train.log" 2>&1 \
        || { tail -n 20 "$dir/train.log" >&2; exit 1; }
    grep -P '\| valid on' "$dir/train.log" | tail -n 1 || true
    touch "$dir/ckpt/done"
}

train_round() {  # round: round 1 from scratch (or from the denoising model), later rounds
    local start="" updates=$UPDATES lang  # from the last round's model
    if [ "$1" -gt 1 ]; then
        start=$W/round$(( $1 - 1 ))/ckpt/checkpoint_last.pt
    else
        updates=$FIRST_UPDATES
        if [ "$DAE_UPDATES" -gt 0 ]; then  # first a model of round 1's shuffled, thinned copies
            mkdir -p "$W/dae"
            [ -f "$W/dae/ckpt/done" ] || for lang in "$L1" "$L2"; do
                cp "$W/round1/dae.spm.n$lang" "$W/dae/pairs.$lang.noisy"
                cp "$W/round1/dae.spm.$lang" "$W/dae/pairs.$lang.clean"
            done
            train "$W/dae" "$DAE_UPDATES" "" "denoising, before round 1"
            start=$W/dae/ckpt/checkpoint_last.pt
        fi
    fi
    train "$W/round$1" "$updates" "$start" "round $1"
}

score_round() {  # round: each direction on the test set, and on the valid set
    SCORED=0
    for src in "$L1" "$L2"; do
        score "$1" "$src" test "$REFERENCE_PREFIX"
        [ -z "$VALID_PREFIX" ] || score "$1" "$src" valid "$VALID_PREFIX"
    done
    # resumed, nothing scored anew and the round in rounds.csv: its paired bootstraps stand
    [ "$SCORED" = 0 ] && grep -q "^$SYSTEM,$1," "$W/rounds.csv" 2> /dev/null && return
    python -m projects.unsupervised.rounds_table \
        --work-dir "$W" --langs "$L1,$L2" --reference-prefix "$REFERENCE_PREFIX" \
        --system "$SYSTEM" --updates-per-round "$UPDATES" \
        --first-round-updates "$(( DAE_UPDATES + FIRST_UPDATES ))" \
        | tail -n 1 | sed 's/^/== rounds.csv: /'
}

choose() {  # the round with the best mean valid BLEU so far (options: projects.unsupervised.choose_round's)
    python -m projects.unsupervised.choose_round \
        --work-dir "$W" --langs "$L1,$L2" "$@"
}

start=$SECONDS
subwords
spent "$start"
score_round 0
for round in $(seq 1 "$ROUNDS"); do
    mkdir -p "$W/round$round"
    start=$SECONDS
    pairs "$round" "$L1"
    pairs "$round" "$L2"
    train_round "$round"
    spent "$start"
    score_round "$round"
    [ -n "$VALID_PREFIX" ] || continue
    best=$(choose --round-only)
    ln -sfn "round$best/ckpt/checkpoint_last.pt" "$W/best.pt"
    if (( PATIENCE > 0 && round - best >= PATIENCE )); then
        echo "== stopping after round $round: no better mean valid BLEU in the $PATIENCE" \
            "round(s) since round $best (PATIENCE=$PATIENCE)"
        break
    fi
done
column -t -s $'\t' "$W/results.tsv"
column -t -s , "$W/rounds.csv"
if [ -n "$VALID_PREFIX" ] && (( ROUNDS > 0 )); then
    choose | sed 's/^/== /'
fi
