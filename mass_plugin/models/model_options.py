"""The command-line options of ``transformer_mass`` beside fairseq's own
Transformer options."""

from .embedding_style import EMBEDDING_STYLES
from .gpu_kernels import CROSS_ATTENTION_PATHS, GELU_PRECISIONS
from .mask_hiding import HIDE_MASK_STATES
from .sdpa_attention import ATTENTION_PATHS


def add_mass_args(parser) -> None:
    """Add the plugin's model options to ``parser``."""
    parser.add_argument(
        "--language-embeddings", metavar="LANGS", default=None,
        help="comma-separated languages, e.g. 'en,fr': one learned embedding "
        "per language is added to the encoder input (source language) and the "
        "decoder input (target language); 'none' for no language embeddings. "
        "Default: the task's --langs when it lists two or more (cross-lingual "
        "pre-training, unsupervised_translation), else the languages of the "
        "--finetune-from-model checkpoint, so fine-tuning keeps them",
    )
    parser.add_argument(
        "--embedding-lang-pair", metavar="SRC-TGT", default=None,
        help="with language embeddings: the languages the encoder and the decoder "
        "are told when the task's -s/-t are not among them, e.g. 'en-en' for "
        "summarization with .document/.summary files. Default: the task's -s/-t. "
        "Ignored by a model without language embeddings",
    )
    parser.add_argument(
        "--hide-mask-states", choices=HIDE_MASK_STATES,
        help="keep the encoder's <mask> states from the decoder in MASS batches: "
        "'cross' leaves them out of the decoder's cross-attention, as MASS-unsupNMT "
        "(the XLM-based code) does; 'encoder' also makes them padding in the "
        "encoder's self-attention, as MASS-supNMT does. Span tokens left unchanged "
        "or replaced at random stay visible, as in both. Default 'none': nothing is "
        "hidden, so the decoder step predicting position t may attend to the "
        "<mask> state at t. Translation, denoising and generation are unaffected",
    )
    parser.add_argument(
        "--embedding-style", choices=tuple(EMBEDDING_STYLES),
        help="'xlm' (the default): as the XLM-based original (MASS-unsupNMT), token "
        "and learned position embeddings added at the same scale with a LayerNorm on "
        "the sum, and GELU (sets --no-scale-embedding --layernorm-embedding "
        "--encoder-learned-pos --decoder-learned-pos --activation-fn gelu unless "
        "given). 'fairseq': tokens scaled by sqrt(dim), no LayerNorm, the "
        "architecture's activation (the default before; checkpoints keep the style "
        "they were trained with). Fine-tuning keeps the --finetune-from-model "
        "checkpoint's style"
    )
    parser.add_argument(
        "--gelu-precision", choices=GELU_PRECISIONS,
        help="'model' (the default): GELU computed by torch in the model's precision "
        "(fp32 inside the kernel: the same values as fairseq's, without its fp32 "
        "copy of the activations under --fp16/--bf16). 'fp32': fairseq's own GELU. "
        "The same function in fp32; no effect with another --activation-fn",
    )
    parser.add_argument(
        "--cross-attention", choices=CROSS_ATTENTION_PATHS,
        help="'fused': the decoder's cross-attention goes through torch's fused "
        "attention in training and scoring, but for the last layer (same values to "
        "float rounding; beam search unchanged). Default 'fairseq': fairseq's "
        "batched matrix products and fp32 softmax there",
    )
    parser.add_argument(
        "--attention", choices=ATTENTION_PATHS,
        help="'sdpa': in training and scoring, every attention goes through torch's "
        "scaled_dot_product_attention: self-attention with one q/k/v product, the "
        "decoder's causal without a mask (decoder inputs are padded on the right), a "
        "padding mask only for batches that have padding (so that the flash kernel can "
        "run), every cross-attention layer (training asks for no alignment weights), "
        "and one host read of the padding per batch instead of one per layer. The same "
        "values to float rounding; beam search unchanged. Default 'fairseq': fairseq's "
        "attention paths",
    )
    parser.add_argument(
        "--compile-layers", action="store_true",
        help="compile each encoder and decoder layer with torch.compile (dynamic "
        "shapes) for training; evaluation and beam search run them uncompiled. Where "
        "compiling fails (no compiler, an unsupported platform) the layers run "
        "uncompiled, with a warning",
    )
