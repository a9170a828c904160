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
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

SPAN_STARTS = ("uniform", "mass")
MASK_MODES = ("span", "discrete")

# The "mass" start rule of the XLM-based MASS code: 20% of spans start the
# sentence, 20% end it, the remaining 60% start uniformly at random.
_MASS_START_FIRST = 0.2
_MASS_START_LAST = 0.2


@dataclass
class MaskedSentence:
    """One sentence after the MASS transformation (1-D int64 arrays)."""

    source: np.ndarray  # encoder input, length m
    prev_output_tokens: np.ndarray  # decoder input, length k
    target: np.ndarray  # decoder target, length k
    positions: np.ndarray  # 1-based original positions of the targets, length k


def span_length(num_tokens: int, mask_ratio: float) -> int:
    """``k = max(1, round(m * mask_ratio))``, rounding halves up, capped at ``m``.

    Every sentence, however short, gets at least one masked token: a
    sentence that is only ``</s>`` (an empty line) predicts its ``</s>``.
    """
    if num_tokens < 1:
        raise ValueError("a sentence has at least one token (its </s>)")
    k = int(np.floor(num_tokens * mask_ratio + 0.5))
    return min(num_tokens, max(1, k))


def choose_masked_positions(
    num_tokens: int,
    k: int,
    rng: np.random.Generator,
    span_start: str = "uniform",
    mask_mode: str = "span",
) -> np.ndarray:
    """0-based, increasing positions of the ``k`` tokens to predict."""
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
            start = int(rng.integers(0, last_start + 1))
    else:
        start = int(rng.integers(0, last_start + 1))
    return np.arange(start, start + k)


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
    positions: Optional[np.ndarray] = None,
) -> MaskedSentence:
    """Apply the MASS transformation to ``tokens`` (never modified).

    Args:
        tokens: 1-D int array, the sentence including its final ``</s>``.
        rng: the generator for this item; all random draws come from it.
        mask_ratio: fraction of the sentence to predict, in (0, 1].
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
        positions: override the 0-based positions to predict (tests).
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    m = len(tokens)
    if positions is None:
        k = span_length(m, mask_ratio)
        positions = choose_masked_positions(m, k, rng, span_start, mask_mode)

    # encoder input: BERT's mask / random / keep split over the chosen tokens
    source = tokens.copy()
    draw = rng.random(len(positions))
    use_random = draw < random_token_prob
    use_mask = draw >= random_token_prob + leave_unmasked_prob
    source[positions[use_mask]] = mask_idx
    n_random = int(use_random.sum())
    if n_random:
        choice = rng.integers(0, len(random_token_ids), size=n_random)
        source[positions[use_random]] = random_token_ids[choice]

    # decoder: previous original token of each predicted token, BOS at 0
    previous = positions - 1
    prev_output_tokens = np.where(
        previous >= 0, tokens[np.maximum(previous, 0)], bos_idx
    )
    return MaskedSentence(
        source=source,
        prev_output_tokens=prev_output_tokens,
        target=tokens[positions],
        positions=positions + 1,
    )
