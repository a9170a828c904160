#!/usr/bin/env bash
# Unsupervised NMT by offline back-translation from the paper's cross-lingual
# MASS checkpoint, in ROUNDS rounds. Round r, for each direction SRC->TGT:
#   1. the round r-1 model of SRC->TGT (round 1: PRETRAINED) translates about
#      MONO_LINES sentences of DATA_BIN/train.SRC with fairseq-generate
#      (greedy), a different part of the text every round (fairseq-generate
#      shards its batches by --distributed-world-size and --distributed-rank);
#   2. the pairs (synthetic TGT, real SRC) are binarized in DATA_BIN's
#      dictionary (mass-binarize) next to DATA_BIN's valid pairs;
#   3. TGT->SRC is fine-tuned on them from its round r-1 model
#      (examples/finetune_nmt.sh, MAX_UPDATE updates, best by valid loss);
#   4. it translates the test set (examples/generate.sh), detokenized (Moses,
#      DETOK), scored with sacreBLEU against the raw reference.
# Results: WORK_DIR/results.tsv (round, direction, BLEU, chrF).
# The paper back-translates online (unsup_online_bt.sh); this offline variant
# has the same model, optimizer and budget: ROUNDS x 2 directions x
# MAX_UPDATE = the online run's 187,500 updates. SCALE=tiny ROUNDS=1 runs
# one round on CPUs (eight fairseq processes). The stages of a round are in
# offline_rounds.sh.
# Interrupted? Run the same command again: finished steps are kept (marks in
# WORK_DIR), a fine-tuning resumes from its checkpoint_last.pt; other settings
# than those of the finished steps stop the recipe (WORK_DIR/.settings).
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help
source "$(dirname "$0")/settings.sh"  # SCALE, by_scale, the models, run_cmd, ...

DATA_BIN=${DATA_BIN:?set DATA_BIN to mass-binarize output: dict.txt, train.L1/train.L2 and the valid/test pairs}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
PRETRAINED=${PRETRAINED:?set PRETRAINED to the checkpoint of examples/paper/pretrain.sh}
L1=${L1:-en}
L2=${L2:-fr}
WORK_DIR=${WORK_DIR:-work/paper-offline-$SCALE}
MODEL_ARGS=${MODEL_ARGS:-$(by_scale "$PAPER_MODEL" "$SMALL_MODEL" "$TINY_MODEL")}
ROUNDS=${ROUNDS:-$(by_scale 3 3 1)}
# [unsup] get-data-nmt.sh keeps 5M monolingual sentences a language (N_MONO)
MONO_LINES=${MONO_LINES:-$(by_scale 5000000 200000 40)}  # about; per language and round
GEN_BEAM=${GEN_BEAM:-1}                  # [unsup] greedy back-translation
GEN_BATCH=${GEN_BATCH:-$(by_scale 256 256 8)}  # sentences per generation batch
# [unsup] --tokens_per_batch 2000 per GPU, 8 GPUs: 16,000 tokens per update
MAX_TOKENS=${MAX_TOKENS:-$(by_scale 2000 4096 256)}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$(by_scale 16000 32768 256)}
LR=${LR:-$(by_scale 0.0001 0.0001 0.001)}   # [unsup] lr=0.0001
WARMUP=${WARMUP:-$(by_scale 4000 1000 2)}   # [unsup] XLM's 4000
# per round and direction: 187,500 / (3 rounds x 2 directions)
MAX_UPDATE=${MAX_UPDATE:-$(by_scale 31250 3000 4)}
BEAM=${BEAM:-1}                          # test set; [unsup] translate.py's default
POST_PROCESS=${POST_PROCESS:-subword_nmt}  # the subword marker of DATA_BIN's text
DETOK=${DETOK:---tokenizer moses}        # fairseq-generate's detokenizer
LOG_INTERVAL=${LOG_INTERVAL:-$(by_scale 100 100 2)}

need "$DATA_BIN/dict.txt" DATA_BIN "binarize the text with mass-binarize (data-prep/)"
for lang in "$L1" "$L2"; do
    need "$DATA_BIN/train.$lang.idx" DATA_BIN "mass-binarize --mono-train writes train.$lang"
    need "$REFERENCE_PREFIX.$lang" REFERENCE_PREFIX "give the prefix of the raw test text"
done
need "$PRETRAINED" PRETRAINED "pre-train with examples/paper/pretrain.sh first"
same_dictionary "train.$L1" "train.$L2" valid test
make_dir "$WORK_DIR"
# more ROUNDS go on from the last one; anything else must be as it was
same_settings "run by unsup_offline_bt.sh" "Use another WORK_DIR, or delete $WORK_DIR to\
 start over." ROUNDS
results=$WORK_DIR/results.tsv
[ "$DRY_RUN" = 1 ] || [ -f "$results" ] || printf 'round\tdirection\tBLEU\tchrF\n' > "$results"
source "$PAPER_DIR/offline_rounds.sh"  # back_translate, train

progress "offline back-translation from $PRETRAINED, SCALE=$SCALE: $ROUNDS round(s) of" \
    "about $MONO_LINES sentences a language and $MAX_UPDATE updates of $TOKENS_PER_UPDATE" \
    "tokens a direction"
for round in $(seq 1 "$ROUNDS"); do
    back_translate "$round" "$L1" "$L2"
    back_translate "$round" "$L2" "$L1"
    train "$round" "$L1" "$L2"
    train "$round" "$L2" "$L1"
done
[ "$DRY_RUN" = 1 ] || print_table "$results"
finished "finished: $results"
