"""The MASS transformation of one sentence (mass_plugin.data.masking)."""

import numpy as np
import pytest

from mass_plugin.data.masking import (
    choose_masked_offsets,
    mask_sentence,
    span_length,
)

EOS, MASK = 2, 99
ORDINARY = np.arange(4, 99)  # ids a masked token may be replaced with


def sentence(m, rng=None):
    rng = rng or np.random.default_rng(0)
    return np.append(rng.integers(4, 99, size=m - 1), EOS)


def mask(tokens, seed=0, **kwargs):
    kwargs.setdefault("mask_ratio", 0.5)
    return mask_sentence(tokens, np.random.default_rng(seed), mask_idx=MASK,
                         bos_idx=EOS, random_token_ids=ORDINARY, **kwargs)


@pytest.mark.parametrize("m,ratio,k", [
    (1, 0.5, 1), (2, 0.5, 1), (3, 0.5, 2), (10, 0.5, 5), (11, 0.5, 6),
    (10, 0.15, 2), (7, 0.3, 2), (10, 1.0, 10), (20, 0.01, 1), (4, 0.99, 4),
])
def test_span_length_rounds_half_up_and_stays_within_the_sentence(m, ratio, k):
    assert span_length(m, ratio) == k


@pytest.mark.parametrize("m,ratio,k", [
    # m * ratio is a half exactly, but the float product falls just below it
    # (25 * 0.58 = 14.499999999999998, 45 * 0.7 = 31.499999999999996)
    (25, 0.58, 15), (45, 0.7, 32), (50, 0.29, 15),
    # a half that floats do hit, and neighbours either side
    (5, 0.7, 4), (25, 0.57, 14), (45, 0.69, 31),
])
def test_span_length_rounds_the_ratio_as_written_not_its_binary_float(m, ratio, k):
    assert span_length(m, ratio) == k


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 17, 64])
@pytest.mark.parametrize("ratio", [0.15, 0.5, 0.7, 1.0])
def test_span_is_contiguous_and_targets_are_the_original_tokens(m, ratio):
    for seed in range(20):
        tokens = sentence(m, np.random.default_rng(seed))
        original = tokens.copy()
        out = mask(tokens, seed=seed, mask_ratio=ratio)
        k = span_length(m, ratio)
        u = out.positions[0]
        assert np.array_equal(tokens, original), "input must not be modified"
        assert len(out.target) == len(out.prev_output_tokens) == k
        # 1-based original positions u .. u + k - 1 inside the sentence
        assert np.array_equal(out.positions, np.arange(u, u + k))
        assert 1 <= u and u + k - 1 <= m
        assert np.array_equal(out.target, tokens[u - 1:u - 1 + k])
        # decoder input: the previous original token, </s> before the first
        expected_prev = np.concatenate([[EOS] if u == 1 else [tokens[u - 2]],
                                        tokens[u - 1:u - 2 + k]])
        assert np.array_equal(out.prev_output_tokens, expected_prev)
        # the encoder sees the sentence unchanged outside the span
        outside = np.ones(m, dtype=bool)
        outside[u - 1:u - 1 + k] = False
        assert np.array_equal(out.source[outside], tokens[outside])
        assert len(out.source) == m


def test_mask_random_keep_proportions_are_80_10_10():
    rng = np.random.default_rng(1)
    counts = {"mask": 0, "keep": 0, "random": 0}
    for seed in range(4000):
        tokens = sentence(12, rng)
        out = mask(tokens, seed=seed)
        span = out.positions - 1
        encoder = out.source[span]
        counts["mask"] += int((encoder == MASK).sum())
        counts["keep"] += int((encoder == tokens[span]).sum())
        replaced = (encoder != MASK) & (encoder != tokens[span])
        counts["random"] += int(replaced.sum())
        # random replacements are ordinary tokens, never special symbols
        assert np.isin(encoder[replaced], ORDINARY).all()
    total = sum(counts.values())
    assert total == 4000 * 6
    # 24,000 draws: three standard deviations are below 0.6 points
    assert abs(counts["mask"] / total - 0.8) < 0.01
    # a random draw equal to the original (1 in 95) counts as kept
    assert abs(counts["random"] / total - 0.1 * 94 / 95) < 0.01
    assert abs(counts["keep"] / total - (0.1 + 0.1 / 95)) < 0.01


def test_proportions_are_options():
    tokens = sentence(40)
    only_masks = mask(tokens, random_token_prob=0.0, leave_unmasked_prob=0.0)
    assert (only_masks.source[only_masks.positions - 1] == MASK).all()
    only_random = mask(tokens, random_token_prob=1.0, leave_unmasked_prob=0.0)
    assert not (only_random.source == MASK).any()
    kept = mask(tokens, random_token_prob=0.0, leave_unmasked_prob=1.0)
    assert np.array_equal(kept.source, tokens)


def test_same_generator_seed_gives_the_same_sample_and_other_seeds_differ():
    tokens = sentence(30)
    a, b, c = mask(tokens, seed=5), mask(tokens, seed=5), mask(tokens, seed=6)
    for field in ("source", "prev_output_tokens", "target", "positions"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.source, c.source) or not np.array_equal(
        a.positions, c.positions)


def test_uniform_starts_cover_every_valid_start():
    rng = np.random.default_rng(0)
    starts = [choose_masked_offsets(10, 4, rng)[0] for _ in range(2000)]
    assert set(starts) == set(range(7))


def test_mass_start_rule_puts_20_percent_at_each_end():
    rng = np.random.default_rng(0)
    n, m, k = 20000, 20, 10
    starts = np.array([choose_masked_offsets(m, k, rng, span_start="mass")[0]
                       for _ in range(n)])
    # 20% forced at each end plus the uniform 60% spread over 11 starts
    expected_end = 0.2 + 0.6 / (m - k + 1)
    assert abs((starts == 0).mean() - expected_end) < 0.015
    assert abs((starts == m - k).mean() - expected_end) < 0.015
    assert abs((starts == 5).mean() - 0.6 / (m - k + 1)) < 0.01


def test_discrete_mode_masks_k_distinct_tokens_not_always_contiguous():
    tokens = sentence(20)
    contiguous = 0
    for seed in range(200):
        out = mask(tokens, seed=seed, mask_mode="discrete")
        pos = out.positions
        assert len(pos) == 10 and len(set(pos)) == 10
        assert np.all(np.diff(pos) > 0)
        assert np.array_equal(out.target, tokens[pos - 1])
        prev = np.where(pos > 1, tokens[np.maximum(pos - 2, 0)], EOS)
        assert np.array_equal(out.prev_output_tokens, prev)
        contiguous += int(np.all(np.diff(pos) == 1))
    assert contiguous < 5


def test_empty_sentence_predicts_its_eos():
    out = mask(np.array([EOS]), random_token_prob=0.0, leave_unmasked_prob=0.0)
    assert out.target.tolist() == [EOS]
    assert out.prev_output_tokens.tolist() == [EOS]
    assert out.positions.tolist() == [1]
    assert out.source.tolist() == [MASK]


def test_ratio_one_masks_everything_like_a_language_model():
    tokens = sentence(9)
    out = mask(tokens, mask_ratio=1.0, random_token_prob=0.0, leave_unmasked_prob=0.0)
    assert (out.source == MASK).all()
    assert np.array_equal(out.target, tokens)
    assert out.positions.tolist() == list(range(1, 10))
    assert np.array_equal(out.prev_output_tokens, np.append(EOS, tokens[:-1]))


@pytest.mark.parametrize("m", [1, 2, 5, 40, 300])
def test_ratio_zero_masks_exactly_one_token_the_bert_like_end_point(m):
    assert span_length(m, 0.0) == 1
    tokens = sentence(m)
    starts = set()
    for seed in range(30):
        out = mask(tokens, seed=seed, mask_ratio=0.0, random_token_prob=0.0,
                   leave_unmasked_prob=0.0)
        assert len(out.target) == 1 and (out.source == MASK).sum() == 1
        starts.add(int(out.positions[0]))
    assert len(starts) >= min(m, 10)  # anywhere in the sentence


@pytest.mark.parametrize("mask_mode", ["span", "discrete"])
def test_feed_gives_the_decoder_the_whole_sentence_and_predicts_only_the_masked(mask_mode):
    PAD = 1
    tokens = sentence(12)
    for seed in range(20):
        plain = mask(tokens, seed=seed, mask_mode=mask_mode)
        fed = mask(tokens, seed=seed, mask_mode=mask_mode, feed_unmasked=True, pad_idx=PAD)
        # the same draws: the encoder input is the same as without feed
        assert np.array_equal(fed.source, plain.source)
        # decoder: every original token, shifted, at every position
        assert np.array_equal(fed.prev_output_tokens, np.append(EOS, tokens[:-1]))
        assert fed.positions.tolist() == list(range(1, 13))
        # targets: the masked tokens where they were, padding elsewhere
        masked = plain.positions - 1
        assert np.array_equal(fed.target[masked], tokens[masked])
        assert (np.delete(fed.target, masked) == PAD).all()


def test_reconstruct_sentence_feeds_the_whole_sentence_and_predicts_every_token():
    tokens = sentence(12)
    for seed in range(20):
        plain = mask(tokens, seed=seed)
        whole = mask(tokens, seed=seed, reconstruct_sentence=True)
        # the same encoder input as MASS: only the decoder side changes
        assert np.array_equal(whole.source, plain.source)
        assert np.array_equal(whole.prev_output_tokens, np.append(EOS, tokens[:-1]))
        assert np.array_equal(whole.target, tokens)
        assert whole.positions.tolist() == list(range(1, 13))


@pytest.mark.parametrize("offsets", [[3, 4, 5], [0, 1, 2], [5, 3, 4], [0, 2, 1, 3], [2, 7]])
def test_given_offsets_in_any_order_line_up_targets_and_decoder_inputs(offsets):
    # contiguous spans take a faster path (slices) than other offset sets
    tokens = sentence(10)
    pos = np.array(offsets)
    out = mask(tokens, offsets=pos, random_token_prob=0.0, leave_unmasked_prob=0.0)
    assert np.array_equal(out.target, tokens[pos])
    assert np.array_equal(out.positions, pos + 1)
    assert np.array_equal(out.prev_output_tokens,
                          np.where(pos > 0, tokens[np.maximum(pos - 1, 0)], EOS))
    assert np.all(out.source[pos] == MASK)
    assert np.array_equal(np.delete(out.source, pos), np.delete(tokens, pos))
