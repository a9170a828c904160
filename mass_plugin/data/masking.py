"""The MASS transformation of one sentence, as a pure function of its inputs.

Song et al., "MASS: Masked Sequence to Sequence Pre-training for Language
Generation" (ICML 2019), section 2.2. For a sentence ``x_1 .. x_m`` (the last
token is fairseq's ``</s>``) and a span ``u .. v`` of ``k`` tokens::

    sentence:  x1 x2  x3  x4  x5  x6          (m = 6, k = 3, u = 3)
    encoder:   x1 x2 [M] [M] [M]  x6          decoder in: x2 x3 x4
    target:            x3  x4  x5             positions:   3  4  5

The decoder is fed the original previous tokens of the span (``</s>``, used
by fairseq as the begin-of-sentence symbol, when the span starts the
sentence) and each decoder step keeps the original position of the token it
predicts, exactly as a teacher-forced decoder would see that step when
decoding the whole sentence.

The paper's ablation "feed" (``feed_unmasked=True``) gives the decoder the
whole sentence instead, so it also sees the tokens the encoder saw; only the
span is predicted (the other targets are padding)::

    decoder in: </s> x1 x2 x3 x4 x5     target: pad pad x3 x4 x5 pad
    positions:    1  2  3  4  5  6

``reconstruct_sentence=True`` keeps that decoder input and makes every token
a target: the whole sentence is reconstructed from MASS's encoder input, as
a denoising auto-encoder does from its noised input::

    decoder in: </s> x1 x2 x3 x4 x5     target: x1 x2 x3 x4 x5 x6
"""

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Optional

import numpy as np

SPAN_STARTS = ("uniform", "mass")
MASK_MODES = ("span", "discrete")

# The "mass" start rule of the XLM-based MASS code (MASS-unsupNMT, which
# places the span among the unmasked tokens): 20% of spans start at the first
# token, 20% end at the last (the final </s>), the remaining 60% start
# uniformly at any valid start, both ends included. So a span starts the
# sentence with probability 0.2 + 0.6 / (m - k + 1). (MASS-supNMT's uniform
# part leaves out the last start, 0.6 / (m - k + 1) less there.)
_MASS_START_FIRST = 0.2
_MASS_START_LAST = 0.2


# Three kinds of position appear below, named apart:
#   offsets     0-based indices into the sentence of the tokens to predict;
#   positions   1-based sentence positions, what the model's position
#               embeddings are given (``offsets + 1``); padding is 0.


@dataclass
class MaskedSentence:
    """One sentence after the MASS transformation (1-D int64 arrays)."""

    source: np.ndarray  # encoder input, length m
    prev_output_tokens: np.ndarray  # decoder input, length k
    target: np.ndarray  # decoder target, length k
    positions: np.ndarray  # 1-based sentence positions of the targets, length k


@lru_cache(maxsize=64)
def _exact_ratio(mask_ratio: float) -> Fraction:
    """The ratio as it was written: 0.58 is 29/50, not the binary float
    0.57999999999999996 (which would round ``25 * 0.58 = 14.5`` down)."""
    return Fraction(repr(float(mask_ratio)))


def span_length(num_tokens: int, mask_ratio: float) -> int:
    """``k = max(1, round(m * mask_ratio))``, rounding halves up, capped at ``m``.

    The product is computed exactly on the ratio's decimal value, so that
    ``m * ratio`` landing on a half (25 tokens at 0.58, 45 at 0.7) rounds up
    as the rule says. Every sentence, however short, gets at least one
    masked token: a sentence that is only ``</s>`` (an empty line) predicts
    its ``</s>``. The end points are the paper's special cases:
    ``mask_ratio=0`` masks one token of every sentence (``k = 1``,
    BERT-like), ``mask_ratio=1`` all of them (``k = m``: the decoder is a
    language model; the encoder input follows the mask / random / keep split
    like any span, see :func:`mask_sentence`).
    """
    if num_tokens < 1:
        raise ValueError("a sentence has at least one token (its </s>)")
    ratio = _exact_ratio(mask_ratio)
    # floor(m * p / q + 1/2) in integers
    k = (2 * num_tokens * ratio.numerator + ratio.denominator) // (2 * ratio.denominator)
    return min(num_tokens, max(1, k))


def _uniform_int(rng: np.random.Generator, n: int) -> int:
    """A uniform integer in ``[0, n)`` (cheaper than ``rng.integers`` per call)."""
    return min(n - 1, int(rng.random() * n))


def choose_masked_offsets(
    num_tokens: int,
    k: int,
    rng: np.random.Generator,
    span_start: str = "uniform",
    mask_mode: str = "span",
) -> np.ndarray:
    """0-based, increasing offsets of the ``k`` tokens to predict."""
    if mask_mode == "discrete":
        # the paper's ablation: k tokens anywhere, not one contiguous span
        return np.sort(rng.choice(num_tokens, size=k, replace=False))
    last_start = num_tokens - k
    if span_start == "mass":
        draw = rng.random()
        if draw < _MASS_START_FIRST:
            start = 0
        elif draw < _MASS_START_FIRST + _MASS_START_LAST:
            start = last_start
        else:
            start = _uniform_int(rng, last_start + 1)
    else:
        start = _uniform_int(rng, last_start + 1)
    return np.arange(start, start + k)


def replace_tokens(values, rng, *, mask_idx, random_token_ids, random_prob, keep_prob):
    """BERT's split, in place on ``values``: each token becomes a random
    ordinary token with probability ``random_prob``, stays with probability
    ``keep_prob``, and becomes ``<mask>`` otherwise (one draw per token, then
    one per random token, from ``rng``)."""
    draw = rng.random(len(values))
    values[draw >= random_prob + keep_prob] = mask_idx
    use_random = draw < random_prob
    n_random = int(use_random.sum())
    if n_random:
        choice = (rng.random(n_random) * len(random_token_ids)).astype(np.int64)
        values[use_random] = random_token_ids[choice]


def noise_decoder_input(prev_output_tokens, rng, *, mask_idx, random_token_ids,
                        mask_prob, random_prob) -> np.ndarray:
    """MASS-supNMT's decoder-input noise: a copy of ``prev_output_tokens``
    where each token (the begin-of-sentence ``</s>`` included, as there)
    becomes ``<mask>`` with probability ``mask_prob`` and a random ordinary
    token with probability ``random_prob``. The targets are not touched."""
    noisy = np.array(prev_output_tokens, dtype=np.int64)
    replace_tokens(noisy, rng, mask_idx=mask_idx, random_token_ids=random_token_ids,
                   random_prob=random_prob, keep_prob=1.0 - mask_prob - random_prob)
    return noisy


def mask_sentence(
    tokens: np.ndarray,
    rng: np.random.Generator,
    *,
    mask_ratio: float,
    mask_idx: int,
    bos_idx: int,
    random_token_ids: np.ndarray,
    random_token_prob: float = 0.1,
    leave_unmasked_prob: float = 0.1,
    span_start: str = "uniform",
    mask_mode: str = "span",
    feed_unmasked: bool = False,
    reconstruct_sentence: bool = False,
    pad_idx: int = 1,
    offsets: Optional[np.ndarray] = None,
) -> MaskedSentence:
    """Apply the MASS transformation to ``tokens`` (never modified).

    Args:
        tokens: 1-D int array, the sentence including its final ``</s>``.
        rng: the generator for this item; all random draws come from it.
        mask_ratio: fraction of the sentence to predict, in [0, 1] (0: one
            token).
        mask_idx: index of ``<mask>``.
        bos_idx: decoder input before the first token (fairseq uses ``</s>``).
        random_token_ids: the ordinary tokens a masked position may be
            replaced with (no special symbols, no ``<mask>``).
        random_token_prob: share of masked positions replaced by a random
            ordinary token in the encoder input.
        leave_unmasked_prob: share of masked positions left unchanged in the
            encoder input; the rest become ``<mask>``.
        span_start: ``uniform`` or ``mass`` (see module docstring).
        mask_mode: ``span`` (contiguous, MASS) or ``discrete``.
        feed_unmasked: the "feed" ablation: the decoder input is the whole
            sentence (see module docstring); targets outside the masked
            positions are ``pad_idx``.
        reconstruct_sentence: the decoder input is the whole sentence, as
            with ``feed_unmasked``, and every token is a target (see module
            docstring).
        pad_idx: index of ``<pad>`` (only used with ``feed_unmasked``).
        offsets: the 0-based offsets of the tokens to predict, instead of
            drawing them (tests).
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    m = len(tokens)
    if offsets is None:
        k = span_length(m, mask_ratio)
        offsets = choose_masked_offsets(m, k, rng, span_start, mask_mode)
    offsets = np.asarray(offsets, dtype=np.int64)
    k = len(offsets)
    # a contiguous span is handled with slices (views), anything else by index
    if k and bool(np.all(np.diff(offsets) == 1)):
        first = int(offsets[0])
        span = slice(first, first + k)
    else:
        first, span = None, offsets

    # encoder input: BERT's mask / random / keep split over the chosen tokens
    source = tokens.copy()
    replaced = source[span]  # a view for a span, a copy otherwise
    replace_tokens(replaced, rng, mask_idx=mask_idx, random_token_ids=random_token_ids,
                   random_prob=random_token_prob, keep_prob=leave_unmasked_prob)
    if first is None:
        source[span] = replaced

    if feed_unmasked or reconstruct_sentence:
        if reconstruct_sentence:
            target = tokens.copy()
        else:
            target = np.full(m, pad_idx, dtype=np.int64)
            target[span] = tokens[span]
        return MaskedSentence(
            source=source,
            prev_output_tokens=np.concatenate(([bos_idx], tokens[:-1])),
            target=target,
            positions=np.arange(1, m + 1),
        )

    # decoder: previous original token of each predicted token, BOS at 0
    if first is not None and first > 0:
        prev_output_tokens = tokens[first - 1:first + k - 1].copy()
    else:
        previous = offsets - 1
        prev_output_tokens = np.where(
            previous >= 0, tokens[np.maximum(previous, 0)], bos_idx
        )
    return MaskedSentence(
        source=source,
        prev_output_tokens=prev_output_tokens,
        target=tokens[span].copy(),
        positions=offsets + 1,
    )
