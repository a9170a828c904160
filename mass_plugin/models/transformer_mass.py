"""``transformer_mass``: fairseq's Transformer with span-only MASS decoding.

Song et al., "MASS: Masked Sequence to Sequence Pre-training for Language
Generation" (ICML 2019). In pre-training the decoder runs only over the ``k``
masked tokens, and each decoder step uses the original position of the token
it predicts; in fine-tuning and generation the model is fairseq's ordinary
encoder-decoder Transformer (incremental decoding, beam search).
"""

from typing import Optional

import torch
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerModel, base_architecture

from ..data.dictionary import MASK_SYMBOL, add_mask_symbol
from .checkpoint_compat import (  # noqa: F401  (IncompatibleCheckpointError: API)
    CHECKSUM_KEY,
    IncompatibleCheckpointError,
    adopt_pretrained,
    check_compatible,
    fit_position_tables,
    missing_options,
    model_checksums,
    pretrained_options,
    upgrade_language_embeddings,
)
from .language_embeddings import build_language_embedding, model_languages
from .options import (
    add_mass_args,
    apply_embedding_style,
    check_attention,
    check_bf16_device,
    check_hide_mask_states,
)
from .stacks import TransformerMassDecoder, TransformerMassEncoder


def hidden_positions(src_tokens, mask_idx, padding_idx) -> torch.Tensor:
    """B x T: True where the encoder input is ``<mask>`` (--hide-mask-states),
    except in a sentence that is nothing else (it keeps all its positions
    visible: there would be nothing left to attend to; the originals always
    keep their begin-of-sentence token). Span tokens left unchanged or
    replaced at random stay visible, as in both original codes."""
    hidden = src_tokens.eq(mask_idx)
    nothing_left = (hidden | src_tokens.eq(padding_idx)).all(dim=1, keepdim=True)
    return hidden & ~nothing_left


@register_model("transformer_mass")
class TransformerMassModel(TransformerModel):
    """fairseq's Transformer for MASS pre-training and its fine-tuning.

    The same weights serve ``--task masked_s2s`` (pre-training, span-only
    decoder) and ``--task translation`` (fine-tuning, generation). Building
    the model adds ``<mask>`` to the task's dictionaries when it is missing,
    so a fine-tuning task that reads the pre-training ``dict.txt`` gets the
    same vocabulary (and embedding size) as pre-training.
    """

    hide_mask_states = "none"  # set by build_model from --hide-mask-states
    mask_idx = None  # the index of <mask>, set by build_model

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

    @staticmethod
    def add_args(parser):
        TransformerModel.add_args(parser)
        add_mass_args(parser)

    @classmethod
    def build_model(cls, args, task):
        check_bf16_device(args)
        check_attention(args, getattr(getattr(task, "cfg", None), "left_pad_target", False))
        pretrained = {}
        if getattr(args, "pretrained_options", None):  # read once, here
            pretrained = pretrained_options(args.finetune_from_model)
            adopt_pretrained(args, pretrained, args.finetune_from_model)
        for dictionary in {id(d): d for d in (task.source_dictionary,
                                             task.target_dictionary)}.values():
            add_mask_symbol(dictionary)
        langs = model_languages(args, task, pretrained)
        # saved in the checkpoint's configuration: generation rebuilds the same model
        args.language_embeddings = ",".join(langs) if langs else "none"
        model = super().build_model(args, task)
        model.hide_mask_states = check_hide_mask_states(
            getattr(args, "hide_mask_states", None) or "none")
        model.mask_idx = model.encoder.dictionary.index(MASK_SYMBOL)
        if langs:
            if model.encoder.embed_positions is None or model.decoder.embed_positions is None:
                raise ValueError("--language-embeddings needs positional embeddings "
                                 "(drop --no-token-positional-embeddings)")
            # one table, shared by the encoder and the decoder
            embed_langs = build_language_embedding(
                args, task, langs, model.encoder.embed_tokens.embedding_dim,
                scale=model.encoder.embed_scale)
            model.encoder.embed_langs = model.decoder.embed_langs = embed_langs
        # saved with the weights, so that fine-tuning with a dictionary whose
        # symbols differ is refused instead of silently scrambling embeddings
        model.register_buffer(CHECKSUM_KEY, torch.tensor(model_checksums(model),
                                                         dtype=torch.long))
        return model

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return TransformerMassDecoder(
            cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention
        )

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return TransformerMassEncoder(TransformerConfig.from_namespace(args), src_dict,
                                      embed_tokens)

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        fit_position_tables(self, state_dict)
        upgrade_language_embeddings(self, state_dict)
        if hasattr(self, CHECKSUM_KEY) and CHECKSUM_KEY not in state_dict:
            # older checkpoints: this model's own (a new tensor, on the CPU)
            state_dict[CHECKSUM_KEY] = torch.tensor(model_checksums(self), dtype=torch.long)
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
        src_lang_id: Optional[object] = None,
        tgt_lang_id: Optional[object] = None,
        return_all_hiddens: bool = True,
        features_only: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
    ):
        """``positions`` (B x k, 1-based, 0 = padding) selects span decoding
        (and, with --hide-mask-states, hides the <mask> states);
        ``src_lang_id``/``tgt_lang_id`` (B) choose the language embeddings."""
        hidden = None
        if positions is not None and self.hide_mask_states != "none":
            hidden = hidden_positions(src_tokens, self.mask_idx, self.encoder.padding_idx)
        padded = bool(src_tokens.eq(self.encoder.padding_idx).any())  # the one host read
        encoder_out = self.encoder(
            src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
            src_lang_id=src_lang_id, tgt_lang_id=tgt_lang_id, hidden=hidden,
            hide_from_encoder=self.hide_mask_states == "encoder", padded=padded)
        return self.decoder(
            prev_output_tokens, encoder_out=encoder_out, positions=positions,
            src_padded=padded or hidden is not None, features_only=features_only,
            alignment_layer=alignment_layer, alignment_heads=alignment_heads,
            src_lengths=src_lengths, return_all_hiddens=return_all_hiddens)


def _default(args, name, value):
    setattr(args, name, getattr(args, name, value))


@register_model_architecture("transformer_mass", "transformer_mass")
def transformer_mass(args):
    """6+6 layers, 512 dims: fairseq's base Transformer with one joint
    vocabulary (shared embeddings) and learned positions, as in MASS. With
    --finetune-from-model, the options not given are the checkpoint's,
    taken when the model is built (checkpoint_compat.adopt_pretrained)."""
    if getattr(args, "hide_mask_states", None) is None:
        args.hide_mask_states = "none"
    check_hide_mask_states(args.hide_mask_states)
    if getattr(args, "finetune_from_model", None) and not hasattr(args, "pretrained_options"):
        # the first call sees only what was given (fairseq's parser suppresses
        # the defaults of model options); later ones keep its answer
        args.pretrained_options = missing_options(args)
    apply_embedding_style(args)
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
