"""``--embedding-style``: how the input embeddings are formed, by name.

``fairseq`` (the default) is fairseq's Transformer: token embeddings scaled
by sqrt(embed_dim), the positions added, no LayerNorm on the sum, and the
architecture's activation. ``xlm`` is what the XLM-based original
(MASS-unsupNMT) does, made of fairseq's own options: token and learned
position embeddings added at the same scale (``--no-scale-embedding``), a
LayerNorm on their sum (``--layernorm-embedding``), learned positions
(``--encoder-learned-pos --decoder-learned-pos``) and GELU
(``--activation-fn gelu``). A fairseq option given explicitly overrides the
style.

Fine-tuning without ``--embedding-style`` keeps the style of the
``--finetune-from-model`` checkpoint, as it keeps its language embeddings:
the scale and the activation have no weights of their own, so a mismatch
would otherwise load silently and compute something else.
"""

import logging

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


def apply_embedding_style(args) -> None:
    """Set ``args.embedding_style`` (given, else the fine-tuned checkpoint's,
    else ``fairseq``) and, for the options it names that were not given, their
    values. Called by the architecture functions, before fairseq's defaults."""
    style = getattr(args, "embedding_style", None)
    if style is None:
        path = getattr(args, "finetune_from_model", None)
        style = saved_model_option(path, "embedding_style")
        if style is not None and style != "fairseq":
            logger.info(f"--embedding-style {style} (from {path})")
    style = style or "fairseq"
    if style not in EMBEDDING_STYLES:
        raise ValueError(f"--embedding-style {style!r}: expected one of "
                         f"{', '.join(EMBEDDING_STYLES)}")
    args.embedding_style = style
    for name, value in EMBEDDING_STYLES[style].items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
