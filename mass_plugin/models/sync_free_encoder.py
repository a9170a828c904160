"""The Transformer encoder's forward pass without waiting for the GPU.

fairseq's ``TransformerEncoderBase.forward_scriptable`` keeps ``has_pads =
encoder_padding_mask.any()`` as a tensor and then tests it with ``if`` once
per layer. On CUDA each such test copies the value to the host, so the CPU
waits for every queued kernel before it may issue the next layer's: the
kernels of a layer and the Python that issues them run one after the other
instead of overlapping (six waits per step for a six-layer encoder).

:func:`encode` gives every layer the padding mask whether or not the batch
has padding. A mask with no padding changes no attention weight, so the
output is the same; only the attention kernel that takes a mask runs on the
rare batch without padding. ``MASS_PLUGIN_FAIRSEQ_ENCODER=1`` keeps
fairseq's own forward pass (for comparisons).
"""

import os
from typing import Optional

import torch

ENV = "MASS_PLUGIN_FAIRSEQ_ENCODER"


def use_fairseq_forward() -> bool:
    return os.environ.get(ENV) == "1"


def encode(encoder, src_tokens, return_all_hiddens: bool = False,
           token_embeddings: Optional[torch.Tensor] = None) -> dict:
    """``encoder`` (a fairseq ``TransformerEncoderBase``) over ``src_tokens``
    (B x T); the dictionary fairseq's forward pass returns."""
    padding = src_tokens.eq(encoder.padding_idx)
    x, embedding = encoder.forward_embedding(src_tokens, token_embeddings)
    x = x.masked_fill(padding.unsqueeze(-1), 0.0).transpose(0, 1)  # T x B x C
    states = [x] if return_all_hiddens else []
    fc_results = []
    for layer in encoder.layers:
        x = layer(x, encoder_padding_mask=padding)
        fc_result = None
        if isinstance(x, tuple):  # layers built with return_fc
            x, fc_result = x
        if return_all_hiddens:
            states.append(x)
            fc_results.append(fc_result)
    if encoder.layer_norm is not None:
        x = encoder.layer_norm(x)
    lengths = (~padding).sum(dim=1, dtype=torch.int32).reshape(-1, 1).contiguous()
    return {
        "encoder_out": [x],  # T x B x C
        "encoder_padding_mask": [padding],  # B x T
        "encoder_embedding": [embedding],  # B x T x C
        "encoder_states": states,  # each T x B x C
        "fc_results": fc_results,
        "src_tokens": [],
        "src_lengths": [lengths],
    }
