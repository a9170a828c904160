"""``--attention sdpa``: attention through torch's scaled_dot_product_attention.

fairseq's MultiheadAttention reaches torch's fused attention only for
self-attention, through ``F.multi_head_attention_forward``: three separate
q, k, v products, and a padding mask that torch merges with the decoder's
causal mask into a float mask of B x H x T x T. A kernel given any mask
cannot be the flash kernel, so every self-attention of a step runs the
memory-efficient one, or the math path. Cross-attention (``static_kv``) never
leaves fairseq's own path: batched products and an fp32 softmax.

:class:`SdpaAttention` computes the same function in training and scoring
(no incremental state, no attention weights asked for):

* self-attention projects q, k and v with one product (the three weight
  matrices side by side);
* the decoder's self-attention is causal without a mask (``is_causal``):
  decoder inputs are padded on the right, so a real position never attends
  to padding, and what padding positions compute is never read;
* a padding mask goes to the kernel only when the caller passes one: the
  encoder of :mod:`sdpa_stacks` passes none for a batch without padding;
* cross-attention projects k and v with one product.

Anything else (incremental decoding, attention weights asked for, an
explicit attention mask, extra key/value biases) takes fairseq's path
unchanged. The weights keep fairseq's names and shapes: checkpoints load
either way.
"""

import torch
import torch.nn.functional as F
from fairseq.modules import MultiheadAttention

ATTENTION_PATHS = ("fairseq", "sdpa")


class SdpaAttention(MultiheadAttention):
    """fairseq's MultiheadAttention with a scaled_dot_product_attention path
    for training and scoring; ``causal`` is set on the decoder's
    self-attention."""

    causal = False

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None,
                need_weights=True, static_kv=False, attn_mask=None, before_softmax=False,
                need_head_weights=False):
        fallback = (incremental_state is not None or need_weights or need_head_weights
                    or before_softmax or attn_mask is not None or self.bias_k is not None
                    or self.add_zero_attn or self.onnx_trace or self.skip_embed_dim_check
                    or query.device.type == "xla")
        if fallback:
            return super().forward(query, key, value, key_padding_mask, incremental_state,
                                   need_weights, static_kv, attn_mask, before_softmax,
                                   need_head_weights)
        return self._sdpa(query, key, key_padding_mask), None

    def _sdpa(self, query, key, key_padding_mask):
        tgt_len, bsz, _ = query.size()
        if self.self_attention:
            weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
            bias = _cat_biases(self.q_proj, self.k_proj, self.v_proj)
            q, k, v = F.linear(query, weight, bias).chunk(3, dim=-1)  # 3 x (T x B x C)
        else:
            q = self.q_proj(query)
            weight = torch.cat([self.k_proj.weight, self.v_proj.weight])
            k, v = F.linear(key, weight, _cat_biases(self.k_proj, self.v_proj)).chunk(2, dim=-1)
        mask = None
        if key_padding_mask is not None:
            # B x S, True at padding -> B x 1 x 1 x S, True where attention may look
            mask = ~key_padding_mask.to(torch.bool).view(bsz, 1, 1, -1)
        out = F.scaled_dot_product_attention(
            self._heads(q), self._heads(k), self._heads(v), attn_mask=mask,
            dropout_p=self.dropout_module.p if self._dropout_active() else 0.0,
            is_causal=self.causal and mask is None, scale=self.scaling)
        # B x H x T x D -> T x B x H x D -> T x B x C
        out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, self.embed_dim)
        return self.out_proj(out)

    def _dropout_active(self):
        return self.training or self.dropout_module.apply_during_inference

    def _heads(self, x):
        # T x B x C -> T x B x H x D -> B x H x T x D
        length, bsz, _ = x.size()
        return x.view(length, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)


def _cat_biases(*projections):
    biases = [p.bias for p in projections]
    if all(b is None for b in biases):
        return None
    return torch.cat([b if b is not None else torch.zeros_like(p.weight[:, 0])
                      for b, p in zip(biases, projections)])


def use_sdpa_attention(model) -> None:
    """Switch every attention module of ``model``'s layers to SdpaAttention
    (in place: a subclass with no state of its own); the decoder's
    self-attention is marked causal."""
    for layer in model.encoder.layers:
        _switch(layer.self_attn)
    for layer in model.decoder.layers:
        _switch(layer.self_attn).causal = True
        if getattr(layer, "encoder_attn", None) is not None:
            _switch(layer.encoder_attn)


def _switch(attention):
    if not isinstance(attention, MultiheadAttention):
        raise TypeError(f"--attention sdpa: {type(attention).__name__} is not fairseq's "
                        "MultiheadAttention")
    attention.__class__ = SdpaAttention
    return attention
