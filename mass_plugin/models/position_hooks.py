"""Forward hooks on the encoder's and decoder's position embedding.

fairseq adds the position embedding's output to the scaled token embedding;
a hook on that module lets :mod:`transformer_mass` change what is added
without copying fairseq's forward passes: the positions of a MASS span, and
a language embedding.
"""

import contextlib

import torch.nn.functional as F
from fairseq.modules import LearnedPositionalEmbedding, SinusoidalPositionalEmbedding


def _position_hook(module, inputs, output):
    """Forward hook on the encoder's and decoder's position embedding.

    Two things can be set on the module (and are, only for the duration of
    one forward call, so copies of the model stay independent):

    * ``mass_positions``: while ``TransformerMassDecoder`` runs a MASS
      span, the span's fairseq position ids; their embedding replaces the
      one fairseq computed from the (span-only) input;
    * ``mass_language``: a B x 1 x C language embedding, added to every
      position (fairseq adds this output to the scaled token embedding).
    """
    positions = getattr(module, "mass_positions", None)
    if positions is not None:
        if isinstance(module, LearnedPositionalEmbedding):
            output = F.embedding(positions, module.weight, module.padding_idx)
        elif isinstance(module, SinusoidalPositionalEmbedding):
            # B x T -> (B*T) -> B x T x C
            flat = module.weights.index_select(0, positions.reshape(-1))
            output = flat.view(*positions.shape, -1).to(output).detach()
        else:
            raise TypeError(f"unsupported positional embedding {type(module).__name__}")
    language = getattr(module, "mass_language", None)
    if language is not None:
        output = output + language.to(output)
    return output


def prepare_position_hook(embed_positions) -> None:
    """Register the hook on ``embed_positions`` (nothing when it is None)."""
    if embed_positions is not None:
        embed_positions.mass_positions = None
        embed_positions.mass_language = None
        embed_positions.register_forward_hook(_position_hook)


@contextlib.contextmanager
def hook_state(embed_positions, **state):
    """Set hook state on the position embedding for one forward call."""
    if embed_positions is None:
        yield
        return
    for name, value in state.items():
        setattr(embed_positions, name, value)
    try:
        yield
    finally:
        for name in state:
            setattr(embed_positions, name, None)
