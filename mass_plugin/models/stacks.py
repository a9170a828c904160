"""The encoder and the decoder of ``transformer_mass``: fairseq's, with forward
passes of their own whose inputs are arguments.

Adapted from fairseq/models/transformer/transformer_{encoder,decoder}.py
(fairseq 0.12): the same computation, plus what MASS and the plugin need:

* the decoder can run on a MASS span: ``positions`` (B x k) gives the
  1-based position in the sentence of the token each step predicts, and
  those positions' embeddings replace the ones of the span's own indices;
* a language embedding (B x 1 x C), added to the position embedding, when the
  model has language embeddings (the encoder's from ``src_lang_id``, the
  decoder's from the target ids that travel in the encoder's output, so that
  beam search knows them too);
* ``hidden`` (B x T, True at the encoder's ``<mask>`` positions) leaves those
  states out of the decoder's cross-attention (the output's padding mask)
  and, with ``hide_from_encoder``, out of the encoder's self-attention;
* ``padded`` / ``src_padded``: whether the batch has padding, read once by
  the model per forward pass (fairseq reads it in every layer; a host read
  each, which on a GPU makes the CPU wait for the kernels queued before it).
  With --attention sdpa a batch without padding passes no mask to the
  kernels, so that the flash kernel can run.
"""

from typing import Optional

import torch
import torch.nn.functional as F
from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerDecoderBase, TransformerEncoderBase
from fairseq.modules import LearnedPositionalEmbedding, SinusoidalPositionalEmbedding
from fairseq.modules.checkpoint_activations import checkpoint_wrapper

from .layers import decoder_layer, encoder_layer


def _wrapped(layer, cfg):
    """``layer`` with fairseq's activation checkpointing and FSDP wrapping,
    as fairseq's build_encoder_layer / build_decoder_layer do."""
    checkpoint = cfg.checkpoint_activations
    if checkpoint:
        layer = checkpoint_wrapper(layer, offload_to_cpu=cfg.offload_activations)
    return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not checkpoint else 0)


class TransformerMassEncoder(TransformerEncoderBase):
    """fairseq's Transformer encoder, plus an optional language embedding and
    the MASS span's hidden ``<mask>`` states (see the module docstring)."""

    def __init__(self, cfg, dictionary, embed_tokens):
        super().__init__(cfg, dictionary, embed_tokens)
        self.embed_langs = None  # set by TransformerMassModel.build_model

    def build_encoder_layer(self, cfg):
        return _wrapped(encoder_layer(cfg, return_fc=self.return_fc), cfg)

    def forward_embedding(self, src_tokens, token_embedding=None, language=None):
        if token_embedding is None:
            token_embedding = self.embed_tokens(src_tokens)
        x = embed = self.embed_scale * token_embedding
        if self.embed_positions is not None:
            positions = self.embed_positions(src_tokens)
            if language is not None:
                positions = positions + language.to(positions)
            x = embed + positions
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x)
        if self.quant_noise is not None:
            x = self.quant_noise(x)
        return x, embed

    def forward(self, src_tokens, src_lengths: Optional[torch.Tensor] = None,
                return_all_hiddens: bool = False, token_embeddings=None, src_lang_id=None,
                tgt_lang_id=None, hidden=None, hide_from_encoder=False, padded=None):
        language, tgt = self._languages(src_tokens, src_lang_id, tgt_lang_id)
        padding = src_tokens.eq(self.padding_idx)  # B x T
        if padded is None:
            padded = bool(padding.any())  # the one host read
        x, embedding = self.forward_embedding(src_tokens, token_embeddings, language)
        x = x * (1 - padding.unsqueeze(-1).type_as(x))
        x = x.transpose(0, 1)  # B x T x C -> T x B x C
        layer_mask = padding if padded else None
        if hidden is not None and hide_from_encoder:
            layer_mask = hidden if layer_mask is None else layer_mask | hidden
        states, fc_results = ([x] if return_all_hiddens else []), []
        for layer in self.layers:
            out = layer(x, encoder_padding_mask=layer_mask)
            x, fc_result = out if isinstance(out, tuple) and len(out) == 2 else (out, None)
            if return_all_hiddens:
                states.append(x)
                fc_results.append(fc_result)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        lengths = (~padding).sum(dim=1, dtype=torch.int32).reshape(-1, 1).contiguous()
        out = {
            "encoder_out": [x],  # T x B x C
            # B x T: what the decoder may not attend to
            "encoder_padding_mask": [padding if hidden is None else padding | hidden],
            "encoder_embedding": [embedding],  # B x T x C
            "encoder_states": states,  # [T x B x C]
            "fc_results": fc_results,
            "src_tokens": [],
            "src_lengths": [lengths],
        }
        if tgt is not None:
            out["tgt_lang_id"] = [tgt]
        return out

    def _languages(self, src_tokens, src_lang_id, tgt_lang_id):
        """The source language embedding (B x 1 x C) and the target language
        ids (B); None and None without language embeddings."""
        if self.embed_langs is None:
            return None, None
        batch, device, langs = src_tokens.size(0), src_tokens.device, self.embed_langs
        src = langs.ids(src_lang_id, langs.default_src, batch, device, "source")
        if tgt_lang_id is None and src_lang_id is None:
            tgt = langs.ids(None, langs.default_tgt, batch, device, "target")
        else:
            tgt = src if tgt_lang_id is None else langs.ids(tgt_lang_id, None, batch, device,
                                                            "target")
        return langs(src), tgt

    def reorder_encoder_out(self, encoder_out, new_order):
        reordered = super().reorder_encoder_out(encoder_out, new_order)
        if encoder_out.get("tgt_lang_id"):
            reordered["tgt_lang_id"] = [encoder_out["tgt_lang_id"][0].index_select(0, new_order)]
        return reordered


class TransformerMassDecoder(TransformerDecoderBase):
    """fairseq's Transformer decoder, which can also run on a MASS span
    (``positions``), plus an optional language embedding (see the module
    docstring). Without ``positions`` it computes what fairseq's does."""

    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False):
        if cfg.cross_self_attention:
            raise ValueError("transformer_mass has no --cross-self-attention: leave it out")
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        self.embed_langs = None  # set by TransformerMassModel.build_model
        self.fused = getattr(cfg, "attention", None) == "sdpa"

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        return _wrapped(decoder_layer(cfg, no_encoder_attn), cfg)

    def forward(self, prev_output_tokens, encoder_out=None, incremental_state=None,
                features_only: bool = False, full_context_alignment: bool = False,
                alignment_layer: Optional[int] = None, alignment_heads: Optional[int] = None,
                src_lengths=None, return_all_hiddens: bool = False, positions=None,
                src_padded=None):
        x, extra = self.extract_features(
            prev_output_tokens, encoder_out, incremental_state, full_context_alignment,
            alignment_layer, alignment_heads, positions=positions, src_padded=src_padded)
        if not features_only:
            x = self.output_layer(x)
        return x, extra

    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None,
                         full_context_alignment=False, alignment_layer=None,
                         alignment_heads=None, positions=None, src_padded=None):
        """The features (B x T x C) and {"attn", "inner_states"}, as fairseq's
        ``extract_features`` returns them."""
        if full_context_alignment:
            raise ValueError("transformer_mass: the decoder's self-attention is causal "
                             "(full_context_alignment is not supported)")
        teacher_forced = incremental_state is None
        if positions is not None and not teacher_forced:
            raise ValueError("explicit span positions are for teacher forcing only")
        x, tokens = self._embed(prev_output_tokens, encoder_out, incremental_state, positions)
        # the fused causal self-attention needs no padding mask: inputs are right-padded
        self_padding = None
        if not (self.fused and teacher_forced) and tokens.eq(self.padding_idx).any():
            self_padding = tokens.eq(self.padding_idx)
        enc, mask = self._encoder_states(encoder_out, teacher_forced, src_padded)
        if alignment_layer is None and not (self.fused and self.training):
            alignment_layer = self.num_layers - 1  # fairseq's: the last layer's weights
        attn, inner_states = None, [x]
        for idx, layer in enumerate(self.layers):
            aligned = idx == alignment_layer
            x, layer_attn, _ = layer(x, enc, mask, incremental_state,
                                     self_attn_padding_mask=self_padding, need_attn=aligned,
                                     need_head_weights=aligned)
            inner_states.append(x)
            if layer_attn is not None and aligned:
                attn = layer_attn.float().to(x)
        if attn is not None:
            attn = attn[:alignment_heads].mean(dim=0)  # heads x B x T x S -> B x T x S
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = x.transpose(0, 1)  # T x B x C -> B x T x C
        if self.project_out_dim is not None:
            x = self.project_out_dim(x)
        return x, {"attn": [attn], "inner_states": inner_states}

    def extract_features_scriptable(self, *args, **kwargs):
        return self.extract_features(*args, **kwargs)

    def _encoder_states(self, encoder_out, teacher_forced, src_padded):
        """The encoder's states (S x B x C) and the mask of what the
        cross-attention may not see (B x S), or None for none of them."""
        enc = mask = None
        if encoder_out is not None and len(encoder_out["encoder_out"]) > 0:
            enc = encoder_out["encoder_out"][0]
        if encoder_out is not None and len(encoder_out["encoder_padding_mask"]) > 0:
            mask = encoder_out["encoder_padding_mask"][0]
        if self.fused and teacher_forced and src_padded is False:
            mask = None  # the model read that the batch has no padding
        return enc, mask

    def _embed(self, prev_output_tokens, encoder_out, incremental_state, span_positions):
        """The decoder's input, T x B x C, and the tokens it embeds (the last
        one only, with an incremental state)."""
        positions = None
        if self.embed_positions is not None:
            positions = self._positions(prev_output_tokens, incremental_state, span_positions)
        language = self._language(prev_output_tokens, encoder_out)
        if language is not None and positions is not None:
            positions = positions + language.to(positions)
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
            if positions is not None:
                positions = positions[:, -1:]
        tokens = prev_output_tokens.contiguous()
        x = self.embed_scale * self.embed_tokens(tokens)
        if self.quant_noise is not None:
            x = self.quant_noise(x)
        if self.project_in_dim is not None:
            x = self.project_in_dim(x)
        if positions is not None:
            x += positions
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        return self.dropout_module(x).transpose(0, 1), tokens  # B x T x C -> T x B x C

    def _positions(self, prev_output_tokens, incremental_state, span_positions):
        """Position embeddings, B x T x C: fairseq's, or those of a span's
        original positions (1-based, 0 for padding)."""
        module = self.embed_positions
        if span_positions is None:
            return module(prev_output_tokens, incremental_state=incremental_state)
        # fairseq numbers positions from padding_idx + 1, and id padding_idx
        # (an all-zero embedding) marks padding: 1-based t -> padding_idx + t
        ids = span_positions + self.padding_idx
        if isinstance(module, LearnedPositionalEmbedding):
            return F.embedding(ids, module.weight, module.padding_idx)
        if isinstance(module, SinusoidalPositionalEmbedding):
            like = module(prev_output_tokens)  # fairseq's own table, grown if needed
            # B x k -> (B*k) -> B x k x C
            flat = module.weights.index_select(0, ids.reshape(-1))
            return flat.view(*ids.shape, -1).to(like).detach()
        raise TypeError(f"unsupported positional embedding {type(module).__name__}")

    def _language(self, prev_output_tokens, encoder_out):
        """The target language's embedding (B x 1 x C), or None without
        language embeddings."""
        if self.embed_langs is None:
            return None
        lang_id = (encoder_out or {}).get("tgt_lang_id") or [None]
        ids = self.embed_langs.ids(lang_id[0], self.embed_langs.default_tgt,
                                   prev_output_tokens.size(0), prev_output_tokens.device,
                                   "target")
        return self.embed_langs(ids)
