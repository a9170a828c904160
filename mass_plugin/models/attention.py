"""The plugin's attention: fairseq's MultiheadAttention, or torch's fused
``scaled_dot_product_attention``, chosen when the layer is built.

``--attention fairseq`` (the default) runs fairseq's code. ``--attention
sdpa`` computes the same function through torch's fused kernel in training
and scoring (no incremental state, no attention weights asked for):

* self-attention projects q, k and v with one product (the three weight
  matrices side by side), cross-attention k and v with one;
* the decoder's self-attention is built causal (``is_causal``): the kernel
  applies causality itself, with no mask, and decoder inputs are padded on
  the right (the model refuses --left-pad-target with it), so a real
  position never attends to padding and what padding positions compute is
  never read;
* a padding mask goes to the kernel only when the caller passes one: the
  encoder passes none for a batch without padding, so that the flash kernel
  can run.

Incremental decoding (beam search), attention weights asked for, an
explicit attention mask and extra key/value biases take fairseq's path in
either mode, where a causal module builds fairseq's own future mask. The
weights keep fairseq's names and shapes: checkpoints load either way.
"""

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.modules import MultiheadAttention

ATTENTION_PATHS = ("fairseq", "sdpa")


class MassAttention(MultiheadAttention):
    """fairseq's MultiheadAttention with the path (``fused``: torch's SDPA in
    training and scoring) and the causality (``is_causal``: the decoder's
    self-attention) fixed when it is built."""

    def __init__(self, *args, fused=False, is_causal=False, **kwargs):
        super().__init__(*args, **kwargs)
        if is_causal and not self.self_attention:
            raise ValueError("only a self-attention can be causal")
        self.fused, self.is_causal = fused, is_causal

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None,
                need_weights=True, static_kv=False, attn_mask=None, before_softmax=False,
                need_head_weights=False):
        teacher_forced = incremental_state is None
        if self.fused and teacher_forced and not self._needs_fairseq(
                query, need_weights, need_head_weights, before_softmax, attn_mask):
            return self._sdpa(query, key, key_padding_mask), None
        if self.is_causal and teacher_forced and attn_mask is None:
            attn_mask = future_mask(query)
        return super().forward(query, key, value, key_padding_mask, incremental_state,
                               need_weights, static_kv, attn_mask, before_softmax,
                               need_head_weights)

    def _needs_fairseq(self, query, need_weights, need_head_weights, before_softmax,
                       attn_mask):
        """What the fused path does not compute: attention weights, a mask
        other than padding, the options that change the keys."""
        return (need_weights or need_head_weights or before_softmax or attn_mask is not None
                or self.bias_k is not None or self.add_zero_attn or self.onnx_trace
                or self.skip_embed_dim_check or query.device.type == "xla")

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
            if self.is_causal:  # both: the kernel takes one mask or causality
                mask = mask & torch.ones(tgt_len, tgt_len, dtype=torch.bool,
                                         device=mask.device).tril()
        out = F.scaled_dot_product_attention(
            self._heads(q), self._heads(k), self._heads(v), attn_mask=mask,
            dropout_p=self.dropout_module.p if self._dropout_active() else 0.0,
            is_causal=self.is_causal and mask is None, scale=self.scaling)
        # B x H x T x D -> T x B x H x D -> T x B x C
        out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, self.embed_dim)
        return self.out_proj(out)

    def _dropout_active(self):
        return self.training or self.dropout_module.apply_during_inference

    def _heads(self, x):
        # T x B x C -> T x B x H x D -> B x H x T x D
        length, bsz, _ = x.size()
        return x.view(length, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)


def future_mask(query):
    """fairseq's decoder mask for ``query`` (T x B x C): -inf above the
    diagonal, the query's dtype and device."""
    length = query.size(0)
    return torch.triu(utils.fill_with_neg_inf(torch.zeros([length, length])), 1).to(query)


def _cat_biases(*projections):
    biases = [p.bias for p in projections]
    if all(b is None for b in biases):
        return None
    return torch.cat([b if b is not None else torch.zeros_like(p.weight[:, 0])
                      for b, p in zip(biases, projections)])
