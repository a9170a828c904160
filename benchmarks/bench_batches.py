"""The batches benchmark.py trains on, and how much of them is padding.

fairseq sorts a corpus by length and cuts it into batches of at most
``--max-tokens`` tokens, so in a large corpus each batch holds sentences of
nearly one length and little padding. Batched from a few thousand
sentences, the same 65,536-token batches hold sentences of many lengths
(about a third of the source tokens were padding). ``corpus_batches``
therefore batches a corpus of ``corpus_sentences`` sentences whose lengths
are drawn from the given sentences' lengths, as fairseq-train would
(shuffled, then sorted by length; batch sizes a multiple of 8, fairseq's
``--required-batch-size-multiple``), picks batches at random from it, and
fills each place with a real sentence of that length. ``sample_batches`` is
the earlier way: the given sentences themselves, batched.
"""

import random

import numpy as np

BATCHINGS = ("corpus", "sample")
# fairseq-train's default --required-batch-size-multiple
BATCH_SIZE_MULTIPLE = 8


def load_sizes(sentences):
    """The lengths (with </s>) of a binarized split, as an int64 array."""
    from fairseq.data import data_utils

    dataset = data_utils.load_indexed_dataset(sentences, None)
    sizes = np.array(dataset.sizes, dtype=np.int64)  # a copy: the original is a view of
    del dataset                                    # a memory map closed with the dataset
    return sizes


def sample_batches(sizes, max_tokens, count=None):
    """Batches of the sentences themselves, at most ``max_tokens`` each and
    sorted by length as fairseq makes them, shuffled with a fixed seed;
    ``count`` of them (the list repeated as needed), or each once."""
    from fairseq.data import data_utils

    order = np.argsort(sizes, kind="mergesort")
    batches = data_utils.batch_by_size(order, lambda i: sizes[i], max_tokens=max_tokens)
    random.Random(0).shuffle(batches)
    if count is not None:
        batches = (batches * (count // len(batches) + 1))[:count]
    return batches


def corpus_batches(sizes, max_tokens, count, corpus_sentences, seed=0):
    """``count`` batches (index arrays into ``sizes``) drawn at random from
    fairseq's batches of a corpus of ``corpus_sentences`` sentences with the
    length distribution of ``sizes``."""
    from fairseq.data import data_utils

    rng = np.random.RandomState(seed)
    lengths = rng.choice(sizes, size=corpus_sentences)
    # fairseq's ordered_indices: a random order, then a stable sort by length
    shuffled = rng.permutation(corpus_sentences)
    order = shuffled[np.argsort(lengths[shuffled], kind="mergesort")]
    batches = data_utils.batch_by_size(
        order, None, num_tokens_vec=lengths[order], max_tokens=max_tokens,
        required_batch_size_multiple=BATCH_SIZE_MULTIPLE)
    if count > len(batches):
        raise ValueError(f"{count} batches asked of a corpus of {corpus_sentences} sentences "
                         f"that makes {len(batches)} at {max_tokens} tokens: raise "
                         "--corpus-sentences")
    chosen = rng.choice(len(batches), size=count, replace=False)
    by_length = {int(n): np.flatnonzero(sizes == n) for n in np.unique(sizes)}
    picked = []
    for b in chosen:
        wanted = lengths[batches[b]]
        picked.append(np.array([rng.choice(by_length[int(n)]) for n in wanted],
                               dtype=np.int64))
    return picked


def make_batches(sentences, max_tokens, count, batching="corpus", corpus_sentences=2_000_000):
    """The batches of a measurement (index arrays into the binarized split
    ``sentences``) and the sentence lengths."""
    sizes = load_sizes(sentences)
    if batching == "sample":
        return sample_batches(sizes, max_tokens, count), sizes
    if batching != "corpus":
        raise ValueError(f"--batching {batching}: choose one of {', '.join(BATCHINGS)}")
    return corpus_batches(sizes, max_tokens, count or 64, corpus_sentences), sizes


def padding_shares(samples, pad):
    """The share of padding among the source tokens and among the target
    tokens of collated ``samples``."""
    def share(tensors):
        total = sum(t.numel() for t in tensors)
        return sum(int(t.eq(pad).sum()) for t in tensors) / total if total else 0.0

    return (share([s["net_input"]["src_tokens"] for s in samples]),
            share([s["target"] for s in samples]))
