"""``--no-repeat-ngram-size`` on CPU.

fairseq 0.12's sequence generator hands its whole token buffer to
:class:`fairseq.ngram_repeat_block.NGramRepeatBlock`, and the pure-PyTorch
path of that class (the one used without the CUDA extension, so always on
CPU) takes the n-1 tokens to match from the end of that buffer, which is
padding until the last step. It then finds no earlier occurrence and blocks
nothing: on CPU the option has no effect (fairseq issues #4709 and #5206).
:func:`install` makes that path look at the tokens generated so far, the
first ``step + 1`` columns; the CUDA extension, which already uses ``step``,
is left alone.

The replacement stays scriptable, so ``torch.jit.script`` of a
``SequenceGenerator`` (fairseq's TorchScript export) still works with the
plugin imported: it is a typed method that calls fairseq's own method, kept
on the class as :data:`FAIRSEQ_METHOD`, on the narrowed buffer.
"""

import types

from fairseq.ngram_repeat_block import NGramRepeatBlock

# the class attribute that keeps fairseq's own pure-PyTorch method
FAIRSEQ_METHOD = "_mass_plugin_fairseq_no_repeat_ngram"


def _no_repeat_ngram(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
    """fairseq's blocking on the tokens so far, not on the padded buffer.

    TorchScript compiles this method from its source: it must stay typed as
    fairseq's and reach fairseq's method through ``self``, not through a
    Python closure."""
    return self._mass_plugin_fairseq_no_repeat_ngram(
        tokens[:, : step + 1], lprobs, bsz, beam_size, step
    )


_no_repeat_ngram.mass_plugin_patched = True


def install():
    """Patch :meth:`NGramRepeatBlock._no_repeat_ngram` once per process."""
    current = NGramRepeatBlock._no_repeat_ngram
    if getattr(current, "mass_plugin_patched", False):
        return
    # TorchScript names a compiled method after the function's __name__, so
    # fairseq's method is kept as a copy named after its new attribute: under
    # its own name it would clash with the replacement when scripted
    kept = types.FunctionType(current.__code__, current.__globals__, FAIRSEQ_METHOD,
                              current.__defaults__, current.__closure__)
    kept.__qualname__ = f"{NGramRepeatBlock.__name__}.{FAIRSEQ_METHOD}"
    kept.__doc__ = current.__doc__
    kept.__kwdefaults__ = current.__kwdefaults__
    kept.__annotations__ = dict(current.__annotations__)
    setattr(NGramRepeatBlock, FAIRSEQ_METHOD, kept)
    NGramRepeatBlock._no_repeat_ngram = _no_repeat_ngram
