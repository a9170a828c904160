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
from fairseq.models.transformer import (
    TransformerConfig,
    TransformerDecoderBase,
    TransformerEncoderBase,
    TransformerModel,
    base_architecture,
)

from .checkpoint_compat import (  # noqa: F401  (IncompatibleCheckpointError: API)
    CHECKSUM_KEY,
    IncompatibleCheckpointError,
    check_compatible,
    fit_position_tables,
    model_checksums,
    upgrade_language_embeddings,
)
from .embedding_style import apply_embedding_style
from .gpu_kernels import apply_gpu_kernels
from .language_embeddings import build_language_embedding, model_languages
from .mask_hiding import (
    check_hide_mask_states,
    hidden_from_self_attention,
    hidden_positions,
    prepare_self_attention_hooks,
)
from .model_options import add_mass_args
from .position_hooks import hook_state, prepare_position_hook
from .precision import check_bf16_device
from .sdpa_stacks import SRC_PADDED, decode_features, encode

MASK_SYMBOL = "<mask>"


def add_mask_symbol(dictionary) -> int:
    """Add ``<mask>`` the way fairseq's masked LM does (appended once)."""
    if MASK_SYMBOL in dictionary.indices:
        return dictionary.index(MASK_SYMBOL)
    return dictionary.add_symbol(MASK_SYMBOL)


class TransformerMassEncoder(TransformerEncoderBase):
    """fairseq's Transformer encoder, plus an optional language embedding.

    ``forward(..., src_lang_id=S, tgt_lang_id=T)`` takes per-sentence
    language ids (B); ``T`` (default ``S``) travels in the encoder output, so
    the decoder, beam search included, knows which language to produce.
    ``forward(..., hidden=H)`` (B x T, True at hidden positions) leaves ``H``
    out of the decoder's cross-attention (the output's padding mask), and with
    ``hide_from_encoder=True`` out of the encoder's self-attention too
    (:mod:`mask_hiding`).
    """

    sdpa = False  # set by --attention sdpa (gpu_kernels)

    def __init__(self, cfg, dictionary, embed_tokens):
        super().__init__(cfg, dictionary, embed_tokens)
        self.embed_langs = None  # set by TransformerMassModel.build_model
        prepare_position_hook(self.embed_positions)
        prepare_self_attention_hooks(self.layers)

    def forward_scriptable(self, src_tokens, src_lengths: Optional[torch.Tensor] = None,
                           return_all_hiddens: bool = False, token_embeddings=None):
        if self.sdpa and not self.return_fc:
            return encode(self, src_tokens, return_all_hiddens, token_embeddings)
        return super().forward_scriptable(src_tokens, src_lengths, return_all_hiddens,
                                          token_embeddings)

    def forward(self, src_tokens, src_lengths: Optional[torch.Tensor] = None,
                return_all_hiddens: bool = False, token_embeddings=None,
                src_lang_id=None, tgt_lang_id=None, hidden=None, hide_from_encoder=False):
        language, tgt = self._languages(src_tokens, src_lang_id, tgt_lang_id)
        with hook_state(self.embed_positions, mass_language=language), \
                hidden_from_self_attention(self.layers, hidden if hide_from_encoder else None):
            out = super().forward(src_tokens, src_lengths, return_all_hiddens,
                                  token_embeddings)
        if hidden is not None:
            out["encoder_padding_mask"] = [out["encoder_padding_mask"][0] | hidden]
            out.pop(SRC_PADDED, None)  # the mask now hides more than padding
        if tgt is not None:
            out["tgt_lang_id"] = [tgt]
        return out

    def _languages(self, src_tokens, src_lang_id, tgt_lang_id):
        """The source language embedding (B x 1 x C) and the target language
        ids (B); None and None without language embeddings."""
        if self.embed_langs is None:
            return None, None
        batch, device = src_tokens.size(0), src_tokens.device
        src = self.embed_langs.ids(src_lang_id, self.embed_langs.default_src, batch,
                                   device, "source")
        if tgt_lang_id is None and src_lang_id is None:
            tgt = self.embed_langs.ids(None, self.embed_langs.default_tgt, batch,
                                       device, "target")
        else:
            tgt = src if tgt_lang_id is None else self.embed_langs.ids(
                tgt_lang_id, None, batch, device, "target")
        return self.embed_langs(src), tgt

    def reorder_encoder_out(self, encoder_out, new_order):
        reordered = super().reorder_encoder_out(encoder_out, new_order)
        if encoder_out.get("tgt_lang_id"):
            reordered["tgt_lang_id"] = [encoder_out["tgt_lang_id"][0].index_select(0, new_order)]
        return reordered


class TransformerMassDecoder(TransformerDecoderBase):
    """A Transformer decoder that can also run on a MASS span.

    ``forward(..., positions=P)`` takes ``P`` (B x k) holding the 1-based
    original position in the sentence of the token each step predicts, 0 for
    padding; without ``positions`` it is fairseq's decoder, unchanged.
    """

    sdpa = False  # set by --attention sdpa (gpu_kernels)

    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        self.embed_langs = None  # set by TransformerMassModel.build_model
        prepare_position_hook(self.embed_positions)

    def extract_features_scriptable(self, prev_output_tokens, encoder_out,
                                    incremental_state=None, full_context_alignment=False,
                                    alignment_layer=None, alignment_heads=None):
        if (self.sdpa and incremental_state is None and not full_context_alignment
                and not self.cross_self_attention):
            return decode_features(self, prev_output_tokens, encoder_out, alignment_layer,
                                   alignment_heads)
        return super().extract_features_scriptable(
            prev_output_tokens, encoder_out, incremental_state, full_context_alignment,
            alignment_layer, alignment_heads)

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                positions=None, **kwargs):
        state = {}
        if self.embed_langs is not None:
            lang_id = (encoder_out or {}).get("tgt_lang_id") or [None]
            lang_id = self.embed_langs.ids(
                lang_id[0], self.embed_langs.default_tgt, prev_output_tokens.size(0),
                prev_output_tokens.device, "target")
            state["mass_language"] = self.embed_langs(lang_id)
        if positions is not None and self.embed_positions is not None:
            if incremental_state is not None:
                raise ValueError("explicit span positions are for teacher forcing only")
            # fairseq numbers positions from padding_idx + 1, and id padding_idx
            # (an all-zero embedding) marks padding: 1-based t -> padding_idx + t
            state["mass_positions"] = positions + self.padding_idx
        with hook_state(self.embed_positions, **state):
            return super().forward(prev_output_tokens, encoder_out=encoder_out,
                                   incremental_state=incremental_state, **kwargs)


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
        for dictionary in {id(d): d for d in (task.source_dictionary,
                                             task.target_dictionary)}.values():
            add_mask_symbol(dictionary)
        langs = model_languages(args, task)
        # saved in the checkpoint's configuration: generation rebuilds the same model
        args.language_embeddings = ",".join(langs) if langs else "none"
        model = super().build_model(args, task)
        model.hide_mask_states = check_hide_mask_states(
            getattr(args, "hide_mask_states", None) or "none")
        model.mask_idx = model.encoder.dictionary.index(MASK_SYMBOL)
        apply_gpu_kernels(model, args, getattr(getattr(task, "cfg", None),
                                               "left_pad_target", False))
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
        extra = {}
        if src_lang_id is not None or tgt_lang_id is not None:
            extra = {"src_lang_id": src_lang_id, "tgt_lang_id": tgt_lang_id}
        if positions is not None and self.hide_mask_states != "none":
            extra["hidden"] = hidden_positions(src_tokens, self.mask_idx,
                                               self.encoder.padding_idx)
            extra["hide_from_encoder"] = self.hide_mask_states == "encoder"
        encoder_out = self.encoder(
            src_tokens, src_lengths=src_lengths, return_all_hiddens=return_all_hiddens,
            **extra,
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
    if getattr(args, "hide_mask_states", None) is None:
        args.hide_mask_states = "none"
    check_hide_mask_states(args.hide_mask_states)
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
