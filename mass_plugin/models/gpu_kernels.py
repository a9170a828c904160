"""Two GPU fast paths, each computing what fairseq's layer computes.

``--gelu-precision model`` runs GELU in the model's own precision with
torch's ``F.gelu``. fairseq's ``gelu`` converts its input to fp32, applies
GELU and converts back, so under ``--fp16``/``--bf16`` every feed-forward
layer writes and reads an fp32 copy of its largest activation, forward and
backward. torch's half-precision GELU kernels already compute in fp32
internally and round once, so the values are the same; only the copies go.
In fp32 (any CPU run) the two are the same function. ``model`` is the
default: on an H200 it made the base model's fp16 step 11% faster (10,371
against 11,600 sentences/s, docs/results/gpu.md, run 4); ``fp32`` keeps
fairseq's.

``--cross-attention fused`` sends the decoder's cross-attention through
torch's ``F.multi_head_attention_forward`` (``scaled_dot_product_attention``
inside) when there is no incremental state, i.e. in training and scoring.
fairseq calls cross-attention with ``static_kv=True``, which only matters
for the incremental decoding cache, but it keeps the call off fairseq's own
fast path, so training runs it as batched matrix products with an fp32
softmax. fairseq's decoder asks its last layer for per-head attention
weights, so that layer keeps fairseq's path; so does incremental decoding
(beam search). The outputs agree
with fairseq's path to float rounding; attention dropout draws its random
numbers differently. The default, ``fairseq``, keeps fairseq's path: on the
H200 the fused path, with ``--loss-chunk-tokens``, did not speed up the base
model's step (run 4).
"""

import torch.nn.functional as F
from fairseq import utils
from fairseq.modules import MultiheadAttention

from .compiled_layers import compile_layers
from .sdpa_attention import ATTENTION_PATHS, use_sdpa_attention

GELU_PRECISIONS = ("fp32", "model")
CROSS_ATTENTION_PATHS = ("fairseq", "fused")


class FusedCrossAttention(MultiheadAttention):
    """fairseq's MultiheadAttention, taking its fused path for cross-attention
    whenever no incremental state is given."""

    def forward(self, query, key, value, key_padding_mask=None, incremental_state=None,
                need_weights=True, static_kv=False, **kwargs):
        per_head = kwargs.get("need_head_weights") or kwargs.get("before_softmax")
        if incremental_state is None and not per_head:
            static_kv = False  # it names the incremental cache only; there is none
        return super().forward(query, key, value, key_padding_mask, incremental_state,
                               need_weights, static_kv, **kwargs)


def _layers(model):
    return list(model.encoder.layers) + list(model.decoder.layers)


def apply_gpu_kernels(model, args, left_pad_target=False) -> None:
    """Switch ``model``'s layers to the paths ``args`` chooses (in place):
    these two, ``--attention`` (:mod:`sdpa_attention`) and
    ``--compile-layers`` (:mod:`compiled_layers`)."""
    gelu = getattr(args, "gelu_precision", None) or "model"
    cross = getattr(args, "cross_attention", None) or "fairseq"
    attention = getattr(args, "attention", None) or "fairseq"
    if gelu not in GELU_PRECISIONS:
        raise ValueError(f"--gelu-precision {gelu}: choose one of {', '.join(GELU_PRECISIONS)}")
    if cross not in CROSS_ATTENTION_PATHS:
        raise ValueError(f"--cross-attention {cross}: choose one of "
                         f"{', '.join(CROSS_ATTENTION_PATHS)}")
    if attention not in ATTENTION_PATHS:
        raise ValueError(f"--attention {attention}: choose one of {', '.join(ATTENTION_PATHS)}")
    if attention == "sdpa" and left_pad_target:
        raise ValueError("--attention sdpa runs the decoder's self-attention causal without "
                         "a padding mask, which needs decoder inputs padded on the right: "
                         "drop --left-pad-target, or use --attention fairseq")
    if gelu == "model":
        fairseq_gelu = utils.get_activation_fn("gelu")
        for layer in _layers(model):
            if layer.activation_fn is fairseq_gelu:
                layer.activation_fn = F.gelu
    if cross == "fused":
        for layer in model.decoder.layers:
            attention = getattr(layer, "encoder_attn", None)
            if type(attention) is MultiheadAttention:
                # a subclass adding a method and no state: the weights stay as they are
                attention.__class__ = FusedCrossAttention
    if attention == "sdpa":
        use_sdpa_attention(model)
        model.encoder.sdpa = model.decoder.sdpa = True
    if getattr(args, "compile_layers", False):
        compile_layers(model)
