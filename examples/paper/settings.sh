# Shared by the paper recipes of examples/paper/ (sourced after usage.sh, not
# run): the SCALE presets and the paper's model and optimizer. Sources the
# project's common.sh (USER_DIR, NUM_GPUS, device_args, decode_and_score,
# bleu_chrf, DRY_RUN's run_cmd), then commands.sh (progress lines, LAUNCHER,
# fairseq-train) and checks.sh (inputs, finished stages and their settings).
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
    *) echo "error: SCALE=$SCALE: choose paper, small (one GPU) or tiny (a CPU smoke run)" >&2
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

# Every model here has fairseq's 1024 positions a side: a sentence of up to
# 1024 subwords is validated whatever MAX_TOKENS is (training skips those
# longer than MAX_TOKENS, and counts them in its log).
MAX_POSITIONS=1024
# valid_args: --max-tokens-valid where MAX_TOKENS is smaller (SCALE=tiny): a
# validation batch must hold the longest sentence the model takes.
valid_args() {
    if [ "$MAX_TOKENS" -lt "$MAX_POSITIONS" ]; then echo "--max-tokens-valid $MAX_POSITIONS"; fi
}

source "$PAPER_DIR/commands.sh"
source "$PAPER_DIR/checks.sh"
