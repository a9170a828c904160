# Shared by the paper recipes of examples/paper/ (sourced after usage.sh, not
# run): the SCALE presets, the paper's model, DRY_RUN, LAUNCHER, input checks
# and finished-stage marks. Sources the project's common.sh (USER_DIR,
# NUM_GPUS, device_args, decode_and_score, bleu_chrf).
#
# Sources of the paper's settings, cited in the recipes:
#   [paper]  Song et al., "MASS: Masked Sequence to Sequence Pre-training for
#            Language Generation", ICML 2019 (section 4.1: pre-training;
#            4.2: unsupervised and low-resource NMT; 4.3: summarization);
#   [unsup]  microsoft/MASS, MASS-unsupNMT: README.md (the pre-training and
#            back-translation commands), train.py and src/ (defaults: XLM's);
#   [sum]    microsoft/MASS, MASS-summarization/README.md (fine-tuning and
#            inference commands).
# Updates: [unsup] counts an epoch as --epoch_size 200000 "sentences", but
# src/trainer.py adds --batch_size (32, its default) to that count after
# every optimizer step whatever the batch holds, so an epoch is
# 200000 / 32 = 6,250 updates on every GPU count. Tokens: [paper] trains on
# 8 GPUs, so tokens per update = 8 x the per-GPU batch (--tokens_per_batch).

SCALE=${SCALE:-paper}
case $SCALE in
    paper | small | tiny) ;;
    *) echo "error: SCALE=$SCALE: choose paper, small (one GPU, hours) or tiny (CPU smoke run)" >&2
       exit 1 ;;
esac

# by_scale PAPER SMALL TINY: the value of the current SCALE.
by_scale() {
    case $SCALE in paper) echo "$1" ;; small) echo "$2" ;; tiny) echo "$3" ;; esac
}

# The models. paper: 6+6 layers, 1024 dimensions, 4096 in the feed-forward
# layers [paper 4.1], 8 heads, dropout 0.1 and attention dropout 0.1, GELU
# ([unsup] --n_heads 8 --dropout 0.1 --attention_dropout 0.1
# --gelu_activation true; XLM's feed-forward block has no dropout of its own
# after the activation, hence --activation-dropout 0). No transformer_mass_*
# architecture has 8 heads at 1024 dimensions (middle has 16), so the sizes
# are spelled out. The XLM embedding style (unscaled token + learned
# position embeddings, LayerNorm on their sum, GELU) is the plugin's default.
PAPER_MODEL="--arch transformer_mass --encoder-layers 6 --decoder-layers 6
 --encoder-embed-dim 1024 --decoder-embed-dim 1024 --encoder-ffn-embed-dim 4096
 --decoder-ffn-embed-dim 4096 --encoder-attention-heads 8 --decoder-attention-heads 8
 --activation-fn gelu --dropout 0.1 --attention-dropout 0.1 --activation-dropout 0"
# small: fairseq's base Transformer sizes (6+6 layers, 512 dimensions), for one GPU
SMALL_MODEL="--arch transformer_mass --encoder-layers 6 --decoder-layers 6
 --encoder-embed-dim 512 --decoder-embed-dim 512 --encoder-ffn-embed-dim 2048
 --decoder-ffn-embed-dim 2048 --encoder-attention-heads 8 --decoder-attention-heads 8
 --activation-fn gelu --dropout 0.1 --attention-dropout 0.1 --activation-dropout 0"
# tiny: 2+2 layers, 32 dimensions, for CI and a CPU smoke run
TINY_MODEL="--arch transformer_mass_tiny"
# [unsup] XLM's optimizer: Adam (0.9, 0.98) with an inverse square-root
# schedule after a linear warm-up from 1e-7 (src/utils.py
# AdamInverseSqrtWithWarmup), gradients clipped at norm 5 (train.py
# --clip_grad_norm default; the commands leave it).
PAPER_OPTIM="--optimizer adam --adam-betas (0.9,0.98) --adam-eps 1e-8
 --lr-scheduler inverse_sqrt --warmup-init-lr 1e-07 --clip-norm 5"

SHELL_LIB=${SHELL_LIB:-$(python -m mass_tools.shell)}
source "$SHELL_LIB/common.sh"
export USER_DIR NUM_GPUS  # the stage recipes need not find them again
PAPER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # examples/paper
EXAMPLES_DIR=$(dirname "$PAPER_DIR")                   # examples
REPO_DIR=$(dirname "$EXAMPLES_DIR")                    # projects/ is there
DRY_RUN=${DRY_RUN:-0}

# flat WORD...: the words of its arguments on one line, as one string (option
# lists for a stage recipe's EXTRA_ARGS or MODEL_ARGS; the presets span lines)
flat() {
    # shellcheck disable=SC2048,SC2086
    echo $*
}

# progress LINE: one line of progress, with the time and the recipe's name.
progress() {
    echo "== $(date +%H:%M:%S) $(basename "$0" .sh): $*"
}

# finished LINE: the last progress line (in a dry run: that nothing ran).
finished() {
    if [ "$DRY_RUN" = 1 ]; then progress "dry run: nothing was run"; else progress "$@"; fi
}

# need PATH VARIABLE ADVICE: stop unless the file PATH exists and is not
# empty, saying which variable named it and what to do.
need() {
    if [ ! -s "$1" ]; then
        echo "error: $2: $1 is missing or empty; $3" >&2
        exit 1
    fi
}

# shown WORD...: the words as one line a shell reads back the same (a word
# with anything but letters, digits and ./:=,@%+_- in single quotes).
shown() {
    local word line=""
    for word in "$@"; do
        if [[ ! $word =~ ^[A-Za-z0-9./:=,@%+_-]+$ ]]; then
            word="'${word//\'/\'\\\'\'}'"
        fi
        line+="$word "
    done
    echo "${line% }"
}

# run_cmd COMMAND...: run a stage's command; with DRY_RUN=1 only print it,
# after "+ " (VAR=value words first: the variables a stage recipe gets).
run_cmd() {
    if [ "$DRY_RUN" = 1 ]; then
        echo "+ $(shown "$@")"
        return 0
    fi
    "$@"
}

# run_to FILE COMMAND...: run_cmd, its standard output to FILE.
run_to() {
    local file=$1
    shift
    if [ "$DRY_RUN" = 1 ]; then
        echo "+ $(shown "$@") > $(shown "$file")"
        return 0
    fi
    "$@" > "$file"
}

# make_dir DIR: mkdir -p, except in a dry run (which writes nothing).
make_dir() { [ "$DRY_RUN" = 1 ] || mkdir -p "$@"; }

# is_done NAME / done_mark NAME: the mark of a finished stage in WORK_DIR
# (a dry run finds none and leaves none).
is_done() { [ "$DRY_RUN" != 1 ] && [ -f "$WORK_DIR/.done.$1" ]; }
done_mark() { [ "$DRY_RUN" = 1 ] || touch "$WORK_DIR/.done.$1"; }

# The training processes: those LAUNCHER starts (torchrun's --nproc_per_node
# times --nnodes), else one per GPU (fairseq starts them), else one.
launcher_ranks() {
    local per_node nodes
    if [ -z "$LAUNCHER" ]; then
        echo $(( NUM_GPUS > 0 ? NUM_GPUS : 1 ))
        return
    fi
    per_node=$(grep -oP -- '--nproc[_-]per[_-]node[ =]\K[0-9]+' <<< "$LAUNCHER" || echo 1)
    nodes=$(grep -oP -- '--nnodes[ =]\K[0-9]+' <<< "$LAUNCHER" || echo 1)
    echo $(( per_node * nodes ))
}

# fairseq-train's device arguments for RANKS processes: common.sh's
# device_args (fp16, --distributed-world-size, the --update-freq that keeps
# TOKENS_PER_UPDATE), counting every rank of every node; on CPUs, gloo.
# fairseq reads a launcher's environment only with --distributed-world-size > 1.
launch_device_args() {
    local ranks
    ranks=$(launcher_ranks)
    if [ "$NUM_GPUS" -gt 0 ]; then
        NUM_GPUS=$ranks device_args
    else  # device_args counts one CPU process: give it the tokens of all ranks
        local args
        args=$(MAX_TOKENS=$(( MAX_TOKENS * ranks )) device_args)
        if [ "$ranks" -gt 1 ]; then
            args+=" --distributed-backend gloo --distributed-world-size $ranks"
        fi
        echo "$args"
    fi
}

# fairseq-train, through LAUNCHER when there is one (torchrun runs the
# console script in each process it starts).
train_cmd() {
    local train
    train=$(command -v fairseq-train) || {
        echo "error: fairseq-train is not on PATH: activate the environment where" \
             "mass-plugin is installed (pip install -e .)" >&2
        exit 1
    }
    # shellcheck disable=SC2086
    run_cmd $LAUNCHER "$train" "$@"
}
