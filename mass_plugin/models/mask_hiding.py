"""``--hide-mask-states``: keep the encoder's ``<mask>`` states from the decoder.

Without it, the decoder step that predicts the token at position t may
attend to the encoder's ``<mask>`` state at t, which knows position t: a
shortcut both original MASS codes close.

* ``cross`` (MASS-unsupNMT, the XLM-based code): the decoder's
  cross-attention leaves out every position whose encoder input is
  ``<mask>``; the encoder itself is unchanged.
* ``encoder`` (MASS-supNMT, the fairseq port): those positions are padding
  to the encoder's self-attention too, so no state depends on a ``<mask>``.

Only the positions that became ``<mask>`` are hidden: the span's tokens that
were left unchanged or replaced by a random token stay visible, as in both
originals. Hiding applies to MASS batches (the decoder runs on a span,
``positions`` given), as the XLM-based code passes its mask in the MASS step
only: translation, denoising, back-translation and generation batches are
untouched. A sentence whose every token is ``<mask>`` keeps them visible
(there would be nothing left to attend to; the originals always keep their
begin-of-sentence token).
"""

import contextlib

import torch

from .position_hooks import hook_state

HIDE_MASK_STATES = ("none", "cross", "encoder")


def check_hide_mask_states(mode) -> str:
    """``mode`` if it is one of HIDE_MASK_STATES, else a ValueError saying so."""
    if mode not in HIDE_MASK_STATES:
        raise ValueError(f"--hide-mask-states {mode!r}: expected one of "
                         f"{', '.join(HIDE_MASK_STATES)}")
    return mode


def hidden_positions(src_tokens, mask_idx, padding_idx) -> torch.Tensor:
    """B x T: True where the encoder input is ``<mask>``, except in a sentence
    that is nothing else (it keeps all its positions visible)."""
    hidden = src_tokens.eq(mask_idx)
    nothing_left = (hidden | src_tokens.eq(padding_idx)).all(dim=1, keepdim=True)
    return hidden & ~nothing_left


def _hide_in_self_attention(layer, args, kwargs):
    """Forward pre-hook of an encoder layer: add the hidden positions to the
    padding mask its self-attention reads (fairseq passes None when the batch
    has no padding)."""
    hidden = getattr(layer, "mass_hidden", None)
    if hidden is None:
        return None
    padding = kwargs.get("encoder_padding_mask")
    kwargs["encoder_padding_mask"] = hidden if padding is None else padding | hidden
    return args, kwargs


def prepare_self_attention_hooks(layers) -> None:
    """Register the pre-hook on each encoder layer (inactive until hidden is set)."""
    for layer in layers:
        layer.mass_hidden = None
        layer.register_forward_pre_hook(_hide_in_self_attention, with_kwargs=True)


@contextlib.contextmanager
def hidden_from_self_attention(layers, hidden):
    """Hide ``hidden`` (B x T) from every layer's self-attention for one call
    (nothing to do when it is None)."""
    with contextlib.ExitStack() as stack:
        for layer in layers if hidden is not None else ():
            stack.enter_context(hook_state(layer, mass_hidden=hidden))
        yield
