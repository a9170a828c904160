"""``--embedding-style``: how the input embeddings are formed, by name.

``xlm`` (the default) is what the XLM-based original (MASS-unsupNMT) does,
made of fairseq's own options: token and learned position embeddings added
at the same scale (``--no-scale-embedding``), a LayerNorm on their sum
(``--layernorm-embedding``), learned positions (``--encoder-learned-pos
--decoder-learned-pos``) and GELU (``--activation-fn gelu``). ``fairseq``
is fairseq's Transformer: token embeddings scaled by sqrt(embed_dim), the
positions added, no LayerNorm on the sum, and the architecture's
activation. A fairseq option given explicitly overrides the style.

``xlm`` became the default when it won the paper-analysis screen
(projects/paper_analysis/results.md): 14.43 against 11.54 valid BLEU for
MASS, three seeds each; 12.25 (three seeds) against 9.71 (one) without
pre-training; on the paper-analysis protocol +3.5 to +5 test BLEU for every
kind of point.
Checkpoints are unaffected: each saves the options the style resolved to,
and a checkpoint from before the option existed is a ``fairseq`` one.

Fine-tuning without ``--embedding-style`` keeps the style of the
``--finetune-from-model`` checkpoint, as it keeps its language embeddings:
the scale and the activation have no weights of their own, so a mismatch
would otherwise load silently and compute something else.
"""

import logging

from fairseq.file_io import PathManager

from ..checkpoint_languages import saved_model_option

logger = logging.getLogger(__name__)

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


def checkpoint_style(path):
    """The embedding style of the checkpoint at ``path`` (``fairseq`` for one
    saved before the option existed); None without such a file."""
    if not path or not PathManager.isfile(path):
        return None
    return saved_model_option(path, "embedding_style") or LEGACY_STYLE


def apply_embedding_style(args) -> None:
    """Set ``args.embedding_style`` (given, else the fine-tuned checkpoint's,
    else ``xlm``) and, for the options it names that were not given, their
    values. Called by the architecture functions, before fairseq's defaults."""
    style = getattr(args, "embedding_style", None)
    if style is None:
        path = getattr(args, "finetune_from_model", None)
        style = checkpoint_style(path)
        if style is not None and style != DEFAULT_STYLE:
            logger.info(f"--embedding-style {style} (from {path})")
    style = style or DEFAULT_STYLE
    if style not in EMBEDDING_STYLES:
        raise ValueError(f"--embedding-style {style!r}: expected one of "
                         f"{', '.join(EMBEDDING_STYLES)}")
    args.embedding_style = style
    for name, value in EMBEDDING_STYLES[style].items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
