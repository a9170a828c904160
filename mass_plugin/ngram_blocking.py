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
"""

from fairseq.ngram_repeat_block import NGramRepeatBlock


def install():
    """Patch :meth:`NGramRepeatBlock._no_repeat_ngram` once per process."""
    original = NGramRepeatBlock._no_repeat_ngram
    if getattr(original, "mass_plugin_patched", False):
        return

    def _no_repeat_ngram(self, tokens, lprobs, bsz, beam_size, step):
        return original(self, tokens[:, : step + 1], lprobs, bsz, beam_size, step)

    _no_repeat_ngram.mass_plugin_patched = True
    NGramRepeatBlock._no_repeat_ngram = _no_repeat_ngram
