"""Noise for denoising auto-encoding, the step that unsupervised NMT mixes
with back-translation (Lample et al., 2018; XLM): shuffle words locally,
drop some, blank some; the model then restores the original sentence.

The three operations are fairseq's own (:mod:`fairseq.data.noising`); this
module only tells them where words begin in a sentencepiece vocabulary,
which fairseq's noising does not know (it reads subword-nmt's ``@@``), and
applies them to one sentence at a time.
"""

import numpy as np
import torch
from fairseq.data.noising import WordDropout, WordShuffle

WORD_SCHEMES = ("sentencepiece", "@@", "tokens")
PIECE_WORD_START = "\u2581"


class _Words:
    """Groups tokens into words: ``sentencepiece`` (a piece starting with
    U+2581 begins a word), ``@@`` (subword-nmt marks pieces that continue
    into the next one) or ``tokens`` (every token is a word)."""

    def __init__(self, dictionary, words):
        if words not in WORD_SCHEMES:
            raise ValueError(f"word scheme {words!r}: expected one of {WORD_SCHEMES}")
        super().__init__(dictionary, bpe_cont_marker="@@" if words == "@@" else None)
        if words == "sentencepiece":
            # special symbols (eos, unk, <mask>, ...) are words of their own
            self.starts = np.array([
                symbol.startswith(PIECE_WORD_START)
                or (symbol.startswith("<") and symbol.endswith(">"))
                for symbol in dictionary.symbols
            ])
            self.get_word_idx = self._piece_word_idx

    def _piece_word_idx(self, x):
        """Word index of every token of ``x`` (T x B)."""
        starts = self.starts[x.numpy()]
        starts[0] = True
        return starts.cumsum(0) - 1


class _Shuffle(_Words, WordShuffle):
    pass


class _Dropout(_Words, WordDropout):
    pass


class SentenceNoise:
    """Noise one sentence (a 1-D tensor ending in eos):

    1. every word moves by fewer than ``shuffle`` positions (0: off; else > 1,
       the ``k`` of Lample et al.);
    2. each word is dropped with probability ``dropout``;
    3. each remaining word becomes ``blank_idx`` with probability ``blank``.

    The final eos stays; draws come from numpy's global generator, so callers
    seed it (``fairseq.data.data_utils.numpy_seed``).
    """

    def __init__(self, dictionary, blank_idx, shuffle=3.0, dropout=0.1, blank=0.1,
                 words="sentencepiece"):
        if shuffle != 0 and shuffle <= 1:
            raise ValueError(f"word shuffle distance {shuffle}: use 0 (off) or a value above 1")
        for name, p in (("word dropout", dropout), ("word blanking", blank)):
            if not 0 <= p < 1:
                raise ValueError(f"{name} probability {p}: expected a value in [0, 1)")
        self.eos = dictionary.eos()
        self.blank_idx = blank_idx
        self.shuffle, self.dropout, self.blank = shuffle, dropout, blank
        self._shuffle = _Shuffle(dictionary, words)
        self._dropout = _Dropout(dictionary, words)

    def __call__(self, tokens):
        # fairseq's shuffle keeps position 0 in place (it expects a start
        # symbol there): give it one, so the first word can move too
        x = torch.cat([tokens.new_tensor([self.eos]), tokens.cpu()]).unsqueeze(1)
        lengths = torch.LongTensor([x.size(0)])
        if self.shuffle:
            x, lengths = self._shuffle.noising(x, lengths, self.shuffle)
        x, lengths = x[1:], lengths - 1
        if self.dropout:
            x, lengths = self._dropout.noising(x, lengths, self.dropout)
        if self.blank:
            x, lengths = self._dropout.noising(x, lengths, self.blank, self.blank_idx)
        return x[: lengths[0], 0].to(tokens.device)
