"""``transformer_mass``: fairseq's Transformer with span-only MASS decoding.

Song et al., "MASS: Masked Sequence to Sequence Pre-training for Language
Generation" (ICML 2019). In pre-training the decoder runs only over the ``k``
masked tokens, and each decoder step uses the original position of the token
it predicts; in fine-tuning and generation the model is fairseq's ordinary
encoder-decoder Transformer (incremental decoding, beam search).
"""

import logging
from typing import Optional

import torch
import torch.nn.functional as F
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerModel,
    base_architecture,
)
from fairseq.modules import LearnedPositionalEmbedding, SinusoidalPositionalEmbedding

from .checkpoint_compat import (  # noqa: F401  (IncompatibleCheckpointError: API)
    CHECKSUM_KEY,
    IncompatibleCheckpointError,
    check_compatible,
    dictionary_checksum,
    fit_position_tables,
)

logger = logging.getLogger(__name__)

MASK_SYMBOL = "<mask>"


def add_mask_symbol(dictionary) -> int:
    """Add ``<mask>`` the way fairseq's masked LM does (appended once)."""
    if MASK_SYMBOL in dictionary.indices:
        return dictionary.index(MASK_SYMBOL)
    return dictionary.add_symbol(MASK_SYMBOL)


def _explicit_positions_hook(module, inputs, output):
    """Forward hook on the decoder's position embedding.

    While :class:`TransformerMassDecoder` runs a MASS span it stores the
    span's fairseq position ids on the module; the embedding of those ids
    then replaces the one fairseq computed from the (span-only) input. The
    state lives on the module itself so that copies of the model stay
    independent.
    """
    positions = getattr(module, "mass_positions", None)
    if positions is None:
        return output
    if isinstance(module, LearnedPositionalEmbedding):
        return F.embedding(positions, module.weight, module.padding_idx)
    if isinstance(module, SinusoidalPositionalEmbedding):
        # B x T -> (B*T) -> B x T x C
        flat = module.weights.index_select(0, positions.reshape(-1))
        return flat.view(*positions.shape, -1).to(output).detach()
    raise TypeError(f"unsupported positional embedding {type(module).__name__}")


class TransformerMassDecoder(TransformerDecoderBase):
    """A Transformer decoder that can also run on a MASS span.

    ``forward(..., positions=P)`` takes ``P`` (B x k) holding the 1-based
    original position in the sentence of the token each step predicts, 0 for
    padding; without ``positions`` it is fairseq's decoder, unchanged.
    """

    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        if self.embed_positions is not None:
            self.embed_positions.mass_positions = None
            self.embed_positions.register_forward_hook(_explicit_positions_hook)

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                positions=None, **kwargs):
        if positions is None or self.embed_positions is None:
            return super().forward(
                prev_output_tokens, encoder_out=encoder_out,
                incremental_state=incremental_state, **kwargs
            )
        if incremental_state is not None:
            raise ValueError("explicit span positions are for teacher forcing only")
        # fairseq numbers positions from padding_idx + 1, and id padding_idx
        # (an all-zero embedding) marks padding: 1-based t -> padding_idx + t
        self.embed_positions.mass_positions = positions + self.padding_idx
        try:
            return super().forward(prev_output_tokens, encoder_out=encoder_out, **kwargs)
        finally:
            self.embed_positions.mass_positions = None


@register_model("transformer_mass")
class TransformerMassModel(TransformerModel):
    """fairseq's Transformer for MASS pre-training and its fine-tuning.

    The same weights serve ``--task masked_s2s`` (pre-training, span-only
    decoder) and ``--task translation`` (fine-tuning, generation). Building
    the model adds ``<mask>`` to the task's dictionaries when it is missing,
    so a fine-tuning task that reads the pre-training ``dict.txt`` gets the
    same vocabulary (and embedding size) as pre-training.
    """

    @classmethod
    def hub_models(cls):
        # fairseq's Transformer lists its own downloadable models here; none
        # of them is a transformer_mass model
        return {}

    @classmethod
    def from_pretrained(cls, model_name_or_path, checkpoint_file="checkpoint_best.pt",
                        data_name_or_path=".", **kwargs):
        """Load a fine-tuned checkpoint as fairseq's generator hub interface::

            model = TransformerMassModel.from_pretrained(
                "checkpoints/ft-en-fr", checkpoint_file="checkpoint_best.pt",
                data_name_or_path="/abs/path/data-bin", source_lang="en",
                target_lang="fr", bpe="sentencepiece",
                sentencepiece_model="work/demo/spm.model")
            model.translate("Choose Edit - Duplicate", beam=5)

        ``data_name_or_path`` is the binarized data directory (for the
        dictionaries), relative to ``model_name_or_path`` or absolute; other
        keyword arguments override the checkpoint's configuration.
        """
        return super().from_pretrained(
            model_name_or_path, checkpoint_file, data_name_or_path, **kwargs
        )

    @classmethod
    def build_model(cls, args, task):
        for dictionary in {id(d): d for d in (task.source_dictionary,
                                             task.target_dictionary)}.values():
            add_mask_symbol(dictionary)
        model = super().build_model(args, task)
        # saved with the weights, so that fine-tuning with a dictionary whose
        # symbols differ is refused instead of silently scrambling embeddings
        checksum = [dictionary_checksum(task.source_dictionary),
                    dictionary_checksum(task.target_dictionary)]
        model.register_buffer(CHECKSUM_KEY, torch.tensor(checksum, dtype=torch.long))
        return model

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return TransformerMassDecoder(
            cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention
        )

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        fit_position_tables(self, state_dict)
        if hasattr(self, CHECKSUM_KEY) and CHECKSUM_KEY not in state_dict:
            state_dict[CHECKSUM_KEY] = getattr(self, CHECKSUM_KEY)  # older checkpoints
        if strict:
            upgraded = dict(state_dict)
            self.upgrade_state_dict(upgraded)  # in place, as fairseq does next
            check_compatible(self, upgraded)
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)

    def forward(
        self,
        src_tokens,
        src_lengths,
        prev_output_tokens,
        positions: Optional[object] = None,
        return_all_hiddens: bool = True,
        features_only: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
    ):
        """``positions`` (B x k, 1-based, 0 = padding) selects span decoding."""
        encoder_out = self.encoder(
            src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens
        )
        return self.decoder(
            prev_output_tokens,
            encoder_out=encoder_out,
            positions=positions,
            features_only=features_only,
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
            src_lengths=src_lengths,
            return_all_hiddens=return_all_hiddens,
        )


def _default(args, name, value):
    setattr(args, name, getattr(args, name, value))


@register_model_architecture("transformer_mass", "transformer_mass")
def transformer_mass(args):
    """6+6 layers, 512 dims: fairseq's base Transformer with one joint
    vocabulary (shared embeddings) and learned positions, as in MASS."""
    _default(args, "share_all_embeddings", True)
    _default(args, "encoder_learned_pos", True)
    _default(args, "decoder_learned_pos", True)
    base_architecture(args)


def _mass_size(args, dim, ffn, heads, layers):
    for side in ("encoder", "decoder"):
        _default(args, f"{side}_embed_dim", dim)
        _default(args, f"{side}_ffn_embed_dim", ffn)
        _default(args, f"{side}_attention_heads", heads)
        _default(args, f"{side}_layers", layers)
    _default(args, "activation_fn", "gelu")
    _default(args, "attention_dropout", 0.1)
    _default(args, "activation_dropout", 0.1)
    transformer_mass(args)


@register_model_architecture("transformer_mass", "transformer_mass_base")
def transformer_mass_base(args):
    """MASS-base: 6+6 layers, 768 dims, 12 heads, GELU."""
    _mass_size(args, dim=768, ffn=3072, heads=12, layers=6)


@register_model_architecture("transformer_mass", "transformer_mass_middle")
def transformer_mass_middle(args):
    """MASS-middle: 6+6 layers, 1024 dims, 16 heads (the paper's NMT model)."""
    _mass_size(args, dim=1024, ffn=4096, heads=16, layers=6)


@register_model_architecture("transformer_mass", "transformer_mass_big")
def transformer_mass_big(args):
    """MASS-big: 12+12 layers, 1024 dims, 16 heads."""
    _mass_size(args, dim=1024, ffn=4096, heads=16, layers=12)


@register_model_architecture("transformer_mass", "transformer_mass_tiny")
def transformer_mass_tiny(args):
    """2+2 layers, 32 dims: for tests and smoke runs only."""
    _mass_size(args, dim=32, ffn=64, heads=2, layers=2)
