"""The command-line options of ``transformer_mass`` beside fairseq's own
Transformer options, and the rules that check them.

``--embedding-style`` names how the input embeddings are formed. ``xlm``
(the default) is what the XLM-based original (MASS-unsupNMT) does, made of
fairseq's own options: token and learned position embeddings added at the
same scale (``--no-scale-embedding``), a LayerNorm on their sum
(``--layernorm-embedding``), learned positions and GELU. ``fairseq`` is
fairseq's Transformer: token embeddings scaled by sqrt(embed_dim), no
LayerNorm on the sum, the architecture's activation. A fairseq option given
explicitly overrides the style. ``xlm`` became the default when it won the
paper-analysis screen (projects/paper_analysis/results.md). Fine-tuning
from a checkpoint keeps its style (checkpoint_compat.adopt_pretrained).
"""

import argparse
import importlib.util

from .attention import ATTENTION_PATHS

EMBEDDING_STYLES = {
    "fairseq": {},
    "xlm": {
        "no_scale_embedding": True,
        "layernorm_embedding": True,
        "encoder_learned_pos": True,
        "decoder_learned_pos": True,
        "activation_fn": "gelu",
    },
}
DEFAULT_STYLE = "xlm"
LEGACY_STYLE = "fairseq"  # a checkpoint saved before --embedding-style existed
HIDE_MASK_STATES = ("none", "cross", "encoder")

# options that are gone, and what to do instead
REMOVED = {
    "--gelu-precision": "GELU always runs in the model's precision, which computes the same "
                        "values as fairseq's fp32 GELU: leave --gelu-precision out",
    "--cross-attention": "it gave no speed on a GPU (docs/results/gpu.md, run 6); "
                         "--attention sdpa fuses every attention: leave --cross-attention out",
}


class RemovedOption(argparse.Action):
    """An option that no longer exists: stops with one line saying what replaced it."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} was removed: {REMOVED[option_string]}")


def add_mass_args(parser) -> None:
    """Add the plugin's model options to ``parser``."""
    parser.add_argument(
        "--language-embeddings", metavar="LANGS", default=None,
        help="comma-separated languages, e.g. 'en,fr': one learned embedding per language "
        "is added to the encoder input (source language) and the decoder input (target "
        "language); 'none' for no language embeddings. Default: the task's --langs when it "
        "lists two or more (cross-lingual pre-training, unsupervised_translation), else "
        "the languages of the --finetune-from-model checkpoint, so fine-tuning keeps them")
    parser.add_argument(
        "--embedding-lang-pair", metavar="SRC-TGT", default=None,
        help="with language embeddings: the languages the encoder and the decoder are told "
        "when the task's -s/-t are not among them, e.g. 'en-en' for summarization with "
        ".document/.summary files. Default: the task's -s/-t. Ignored by a model without "
        "language embeddings")
    parser.add_argument(
        "--hide-mask-states", choices=HIDE_MASK_STATES,
        help="keep the encoder's <mask> states from the decoder in MASS batches: 'cross' "
        "leaves them out of the decoder's cross-attention, as MASS-unsupNMT (the XLM-based "
        "code) does; 'encoder' also makes them padding in the encoder's self-attention, as "
        "MASS-supNMT does. Span tokens left unchanged or replaced at random stay visible, as "
        "in both. Default 'none': nothing is hidden, so the decoder step predicting position "
        "t may attend to the <mask> state at t. Translation, denoising and generation are "
        "unaffected")
    parser.add_argument(
        "--embedding-style", choices=tuple(EMBEDDING_STYLES),
        help="'xlm' (the default): as the XLM-based original (MASS-unsupNMT), token and "
        "learned position embeddings added at the same scale with a LayerNorm on the sum, and "
        "GELU (sets --no-scale-embedding --layernorm-embedding --encoder-learned-pos "
        "--decoder-learned-pos --activation-fn gelu unless given). 'fairseq': tokens scaled by "
        "sqrt(dim), no LayerNorm, the architecture's activation (the default before; "
        "checkpoints keep the style they were trained with). Fine-tuning keeps the "
        "--finetune-from-model checkpoint's style")
    parser.add_argument(
        "--attention", choices=ATTENTION_PATHS,
        help="'sdpa': in training and scoring, every attention goes through torch's "
        "scaled_dot_product_attention: self-attention with one q/k/v product, the decoder's "
        "built causal (decoder inputs are padded on the right), a padding mask only for "
        "batches that have padding (so that the flash kernel can run), and one host read of "
        "the padding per batch. The same values to float rounding; beam search unchanged. "
        "Default 'fairseq': fairseq's attention")
    parser.add_argument(
        "--compile-layers", action="store_true",
        help="compile each encoder and decoder layer with torch.compile (dynamic shapes) for "
        "training; evaluation and beam search run them uncompiled. Where compiling fails (no "
        "compiler, an unsupported platform) the layers run uncompiled, with a warning")
    for option in REMOVED:
        parser.add_argument(option, action=RemovedOption, help=argparse.SUPPRESS)


def apply_embedding_style(args) -> None:
    """For the options a given (or the default) --embedding-style names that
    were not given, set the style's values. With --finetune-from-model and
    no style given nothing is set here: the checkpoint's style is taken when
    the model is built (checkpoint_compat.adopt_pretrained)."""
    style = getattr(args, "embedding_style", None)
    if style is None and getattr(args, "finetune_from_model", None):
        args.embedding_style = None  # the key exists, for the checkpoint's style later
        return
    style = style or DEFAULT_STYLE
    if style not in EMBEDDING_STYLES:
        raise ValueError(f"--embedding-style {style!r}: expected one of "
                         f"{', '.join(EMBEDDING_STYLES)}")
    args.embedding_style = style
    for name, value in EMBEDDING_STYLES[style].items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


def check_hide_mask_states(mode) -> str:
    """``mode`` if it is one of HIDE_MASK_STATES, else a ValueError saying so."""
    if mode not in HIDE_MASK_STATES:
        raise ValueError(f"--hide-mask-states {mode!r}: expected one of "
                         f"{', '.join(HIDE_MASK_STATES)}")
    return mode


def check_attention(args, left_pad_target) -> None:
    """A ValueError for an --attention this model cannot run."""
    attention = getattr(args, "attention", None) or "fairseq"
    if attention not in ATTENTION_PATHS:
        raise ValueError(f"--attention {attention}: choose one of {', '.join(ATTENTION_PATHS)}")
    if attention == "sdpa" and left_pad_target:
        raise ValueError("--attention sdpa runs the decoder's self-attention causal without a "
                         "padding mask, which needs decoder inputs padded on the right: drop "
                         "--left-pad-target, or use --attention fairseq")


# fairseq-train (fairseq 0.12) also sets --tpu when --bf16 is given
BF16_ON_GPU = (
    "--bf16: fairseq-train (fairseq 0.12) also sets --tpu when --bf16 is given, "
    "and torch_xla is not installed, so this run would stop looking for a TPU. "
    "On a GPU, train in bf16 with fairseq-hydra-train and common.bf16=true, e.g. "
    "fairseq-hydra-train --config-dir \"$(python -m mass_plugin)/config\" "
    "--config-name pretrain_base common.fp16=false common.bf16=true task.data=DATA "
    "(any fairseq-train option has a key there), or use --fp16"
)


def check_bf16_device(args) -> None:
    """Raise ValueError (BF16_ON_GPU) for --bf16 that fairseq turned into a TPU
    run on a machine without torch_xla."""
    wants_tpu = getattr(args, "bf16", False) and getattr(args, "tpu", False)
    if wants_tpu and importlib.util.find_spec("torch_xla") is None:
        raise ValueError(BF16_ON_GPU)
