"""The noise of the denoising auto-encoding step: words (not pieces) move a
bounded distance, are dropped or blanked; the final eos stays."""

import pytest
import torch
from fairseq.data import Dictionary, data_utils

from mass_plugin.data.denoising import SentenceNoise

# twelve words of two pieces each: "\u2581wI" starts word I, "cI" continues it
WORDS = [[f"\u2581w{i}", f"c{i}"] for i in range(12)]


@pytest.fixture()
def dictionary():
    d = Dictionary()
    for word in WORDS:
        for piece in word:
            d.add_symbol(piece)
    d.add_symbol("<mask>")
    return d


def sentence(d):
    return torch.LongTensor([d.index(p) for word in WORDS for p in word] + [d.eos()])


def words_of(d, tokens):
    """The output as words; fails if the two pieces of a word were split
    (a blanked word is two <mask> pieces)."""
    pieces = [d[t] for t in tokens.tolist()]
    assert pieces[-1] == "</s>"
    out, i = [], 0
    while i < len(pieces) - 1:
        if pieces[i] == "<mask>":
            assert pieces[i + 1] == "<mask>", pieces
            out.append("<mask>")
            i += 2
            continue
        assert pieces[i].startswith("\u2581w"), pieces
        assert pieces[i + 1] == "c" + pieces[i][2:], pieces  # its own second piece
        out.append(int(pieces[i][2:]))
        i += 2
    return out


def noisy(noise, tokens, draw):
    with data_utils.numpy_seed(7, draw):
        return noise(tokens)


def test_shuffle_moves_whole_words_fewer_than_k_positions(dictionary):
    noise = SentenceNoise(dictionary, dictionary.index("<mask>"), shuffle=3, dropout=0, blank=0)
    moved = set()
    for draw in range(50):
        order = words_of(dictionary, noisy(noise, sentence(dictionary), draw))
        assert sorted(order) == list(range(12))
        for position, word in enumerate(order):
            assert abs(position - word) < 3
            if position != word:
                moved.add(word)
    assert 0 in moved  # the first word moves too
    assert len(moved) == 12


def test_dropout_and_blanking_act_on_whole_words_at_their_rate(dictionary):
    mask = dictionary.index("<mask>")
    drop = SentenceNoise(dictionary, mask, shuffle=0, dropout=0.3, blank=0)
    blank = SentenceNoise(dictionary, mask, shuffle=0, dropout=0, blank=0.3)
    kept = blanked = 0
    for draw in range(200):
        words = words_of(dictionary, noisy(drop, sentence(dictionary), draw))
        assert words == sorted(words)  # dropping keeps the order
        kept += len(words)
        words = words_of(dictionary, noisy(blank, sentence(dictionary), draw))
        assert len(words) == 12
        blanked += words.count("<mask>")
    assert 0.6 < kept / (200 * 12) < 0.8
    assert 0.2 < blanked / (200 * 12) < 0.4


def test_no_noise_is_the_identity_and_a_seed_repeats_its_draw(dictionary):
    mask = dictionary.index("<mask>")
    tokens = sentence(dictionary)
    assert torch.equal(SentenceNoise(dictionary, mask, 0, 0, 0)(tokens), tokens)
    noise = SentenceNoise(dictionary, mask)
    assert torch.equal(noisy(noise, tokens, 3), noisy(noise, tokens, 3))
    assert any(not torch.equal(noisy(noise, tokens, 3), noisy(noise, tokens, d))
               for d in range(4, 8))


def test_token_scheme_and_bad_settings(dictionary):
    mask = dictionary.index("<mask>")
    # every token a word: the two pieces of a word get separated somewhere
    noise = SentenceNoise(dictionary, mask, shuffle=3, dropout=0, blank=0, words="tokens")
    with pytest.raises(AssertionError):
        for draw in range(20):
            words_of(dictionary, noisy(noise, sentence(dictionary), draw))
    for kwargs, message in ((dict(shuffle=1), "shuffle distance 1"),
                            (dict(dropout=1.0), "dropout probability 1.0"),
                            (dict(blank=-0.1), "blanking probability -0.1"),
                            (dict(words="bpe"), "word scheme 'bpe'")):
        with pytest.raises(ValueError, match=message):
            SentenceNoise(dictionary, mask, **kwargs)
