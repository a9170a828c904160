"""The encoder's and the decoder's layer loops for ``--attention sdpa``.

They compute what fairseq's ``forward_scriptable`` (encoder) and
``extract_features_scriptable`` (decoder) compute, with three differences
that change no value the model returns at a real (non-padding) position:

* the encoder reads once per batch whether it has padding, where fairseq
  reads it once per layer (a host read each, which on a GPU makes the CPU
  wait for the kernels queued before it); a batch without padding passes no
  mask to its layers, nor to the decoder's cross-attention;
* the decoder gives its self-attention neither the causal mask nor the
  padding mask: :class:`SdpaAttention` is causal on its own, and decoder
  inputs are padded on the right (its own host read goes too);
* in training, the decoder asks no layer for attention weights (fairseq
  asks its last layer, for alignments that training does not read), so every
  cross-attention layer takes the fused path.

Incremental decoding, ``full_context_alignment`` and cross-self-attention
keep fairseq's code.
"""

import torch

# a key of the encoder's output: [False] when the batch has no padding (a
# host-side flag, so that the decoder need not read the mask to know it)
SRC_PADDED = "mass_src_padded"


def encode(encoder, src_tokens, return_all_hiddens=False, token_embeddings=None):
    """The output of fairseq's ``TransformerEncoderBase.forward_scriptable``."""
    padding = src_tokens.eq(encoder.padding_idx)  # B x T
    x, embedding = encoder.forward_embedding(src_tokens, token_embeddings)
    x = x * (1 - padding.unsqueeze(-1).type_as(x))
    x = x.transpose(0, 1)  # B x T x C -> T x B x C
    padded = bool(padding.any())  # the batch's one host read
    states = [x] if return_all_hiddens else []
    for layer in encoder.layers:
        x = layer(x, encoder_padding_mask=padding if padded else None)
        if return_all_hiddens:
            states.append(x)
    if encoder.layer_norm is not None:
        x = encoder.layer_norm(x)
    lengths = (~padding).sum(dim=1, dtype=torch.int32).reshape(-1, 1).contiguous()
    return {
        "encoder_out": [x],  # T x B x C
        "encoder_padding_mask": [padding],  # B x T
        "encoder_embedding": [embedding],  # B x T x C
        "encoder_states": states,  # [T x B x C]
        "fc_results": [],
        "src_tokens": [],
        "src_lengths": [lengths],
        SRC_PADDED: [padded],
    }


def _embed(decoder, prev_output_tokens):
    """The decoder's input embeddings, T x B x C, as fairseq's decoder makes
    them without incremental state."""
    positions = None
    if decoder.embed_positions is not None:
        positions = decoder.embed_positions(prev_output_tokens)
    x = decoder.embed_scale * decoder.embed_tokens(prev_output_tokens.contiguous())
    if decoder.quant_noise is not None:
        x = decoder.quant_noise(x)
    if decoder.project_in_dim is not None:
        x = decoder.project_in_dim(x)
    if positions is not None:
        x += positions
    if decoder.layernorm_embedding is not None:
        x = decoder.layernorm_embedding(x)
    return decoder.dropout_module(x).transpose(0, 1)  # B x T x C -> T x B x C


def decode_features(decoder, prev_output_tokens, encoder_out, alignment_layer=None,
                    alignment_heads=None):
    """What fairseq's ``extract_features_scriptable`` returns without
    incremental state: the features (B x T x C) and {"attn", "inner_states"}
    ("attn" is None in training unless ``alignment_layer`` is given)."""
    enc = mask = None
    if encoder_out is not None and len(encoder_out["encoder_out"]) > 0:
        enc = encoder_out["encoder_out"][0]
    if encoder_out is not None and len(encoder_out["encoder_padding_mask"]) > 0:
        mask = encoder_out["encoder_padding_mask"][0]
        if encoder_out.get(SRC_PADDED) == [False]:
            mask = None
    if alignment_layer is None and not decoder.training:
        alignment_layer = decoder.num_layers - 1
    x = _embed(decoder, prev_output_tokens)
    attn, inner_states = None, [x]
    for idx, layer in enumerate(decoder.layers):
        aligned = idx == alignment_layer
        x, layer_attn, _ = layer(x, enc, mask, None, self_attn_mask=None,
                                 self_attn_padding_mask=None, need_attn=aligned,
                                 need_head_weights=aligned)
        inner_states.append(x)
        if layer_attn is not None and aligned:
            attn = layer_attn.float().to(x)
    if attn is not None:
        attn = attn[:alignment_heads].mean(dim=0)  # heads x B x T x S -> B x T x S
    if decoder.layer_norm is not None:
        x = decoder.layer_norm(x)
    x = x.transpose(0, 1)  # T x B x C -> B x T x C
    if decoder.project_out_dim is not None:
        x = decoder.project_out_dim(x)
    return x, {"attn": [attn], "inner_states": inner_states}
