"""A fairseq dataset that applies the MASS transformation to each sentence."""

import threading

import numpy as np
import torch
from fairseq.data import FairseqDataset

from .masking import mask_sentence, noise_decoder_input

# Padding value of the ``positions`` tensor: real positions start at 1.
PAD_POSITION = 0


def ordinary_token_ids(dictionary, exclude=()) -> np.ndarray:
    """Ids a masked token may be replaced with: no special symbols, none of
    ``exclude`` (``<mask>``), and none of fairseq's ``madeupword`` fillers."""
    excluded = set(exclude)
    ids = [
        i
        for i in range(dictionary.nspecial, len(dictionary))
        if i not in excluded and not dictionary[i].startswith("madeupword")
    ]
    if not ids:
        raise ValueError("the dictionary has no ordinary tokens to sample from")
    return np.asarray(ids, dtype=np.int64)


_UINT64 = (1 << 64) - 1


def copy_numbers(indices) -> np.ndarray:
    """For each entry, how many times its value came earlier in ``indices``:
    ``[4, 2, 4, 4]`` gives ``[0, 0, 1, 2]``."""
    indices = np.asarray(indices)
    order = np.argsort(indices, kind="stable")
    ranked = indices[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(ranked)]))
    copies = np.empty(len(indices), dtype=np.int64)
    copies[order] = np.arange(len(ranked)) - run_start
    return copies


def _right_padded(rows, pad_value) -> torch.Tensor:
    """1-D int64 tensors as one right-padded 2-D tensor; what fairseq's
    ``collate_tokens`` does for this case, a few times faster (numpy rows)."""
    arrays = [row.numpy() for row in rows]
    out = np.full((len(arrays), max(len(a) for a in arrays)), pad_value, dtype=np.int64)
    for out_row, array in zip(out, arrays):
        out_row[: len(array)] = array
    return torch.from_numpy(out)


class _ItemGenerators(threading.local):
    """Random generators keyed by ``(seed, epoch, index)``, made cheaply.

    Philox is a counter-based generator: its key and counter *are* its state,
    so setting ``key = (seed, index)`` and ``counter = (0, epoch, 0, 0)`` on
    one generator gives each item its own stream at a fraction of the cost of
    building a seeded generator per item (which dominated the masking time).
    Draws advance the lowest counter word, so epochs never share numbers.
    One generator per thread.
    """

    def __init__(self):
        self.bit_generator = np.random.Philox(0)
        self.generator = np.random.Generator(self.bit_generator)

    def get(self, seed, epoch, index):
        self.bit_generator.state = {
            "bit_generator": "Philox",
            "state": {
                "counter": np.array([0, epoch & _UINT64, 0, 0], dtype=np.uint64),
                "key": np.array([seed & _UINT64, index & _UINT64], dtype=np.uint64),
            },
            "buffer": np.zeros(4, dtype=np.uint64),
            "buffer_pos": 4,
            "has_uint32": 0,
            "uinteger": 0,
        }
        return self.generator


_GENERATORS = _ItemGenerators()


class MaskedS2SDataset(FairseqDataset):
    """MASS pre-training examples from a dataset of sentences.

    Song et al., "MASS: Masked Sequence to Sequence Pre-training for Language
    Generation" (ICML 2019). Item ``i`` of epoch ``e`` is masked with a
    generator seeded by ``(seed, e, i)``, so it is the same whatever the
    number of data-loader workers or GPUs; with ``deterministic=True`` (the
    validation sets) every epoch uses epoch 0's masks.

    When an epoch draws a sentence more than once (``lang_sample_sizes``),
    the ``c``-th copy of sentence ``i`` is the slot ``i + c * len(dataset)``:
    :meth:`ordered_indices` returns slots, every method that takes an index
    takes a slot, and each copy gets its own mask from ``(seed, e, slot)``.
    The first copy's slot is ``i`` itself.

    Args:
        dataset: sentences as 1-D LongTensors ending with ``</s>``.
        sizes: their lengths.
        dictionary: the vocabulary, which already holds ``<mask>``.
        mask_idx: index of ``<mask>``.
        seed: the random seed (``--seed``).
        shuffle: shuffle the order of same-length sentences each epoch.
        deterministic: use the same masks in every epoch.
        lang_ids: optional language id of every sentence (one int for all,
            or an array); batches then carry ``net_input["src_lang_id"]``.
        lang_sample_sizes: optional ``{lang_id: n}``: each epoch draws ``n``
            sentences of that language (with replacement when ``n`` exceeds
            what there is) instead of taking every sentence once.
        return_raw: also return each sentence unmasked (``sample["raw"]``),
            for back-translation.
        decoder_mask_prob, decoder_random_token_prob: shares of the decoder's
            input tokens replaced by ``<mask>`` / a random ordinary token
            (MASS-supNMT's noise, :func:`masking.noise_decoder_input`); the
            targets stay clean. Drawn after the encoder's masking, so
            leaving them at 0 changes no other draw.
        **mask_args: keyword arguments of :func:`masking.mask_sentence`
            (``mask_ratio``, ``random_token_prob``, ...).
    """

    def __init__(self, dataset, sizes, dictionary, mask_idx, seed=1,
                 shuffle=True, deterministic=False, lang_ids=None,
                 lang_sample_sizes=None, return_raw=False, decoder_mask_prob=0.0,
                 decoder_random_token_prob=0.0, **mask_args):
        self.dataset = dataset
        self.sizes = np.asarray(sizes)
        self.dictionary = dictionary
        self.mask_idx = mask_idx
        self.seed = seed
        self.shuffle = shuffle
        self.deterministic = deterministic
        self.mask_args = mask_args
        self.random_token_ids = ordinary_token_ids(dictionary, exclude=[mask_idx])
        if lang_ids is not None and np.ndim(lang_ids) == 0:
            lang_ids = np.full(len(dataset), int(lang_ids), dtype=np.int64)
        self.lang_ids = None if lang_ids is None else np.asarray(lang_ids, dtype=np.int64)
        self.lang_sample_sizes = lang_sample_sizes
        if lang_sample_sizes and self.lang_ids is None:
            raise ValueError("lang_sample_sizes needs lang_ids")
        self.return_raw = return_raw
        self.decoder_noise = None
        if decoder_mask_prob or decoder_random_token_prob:
            self.decoder_noise = dict(mask_prob=decoder_mask_prob,
                                      random_prob=decoder_random_token_prob)
        # fairseq reuses its data loader, and persistent workers keep the copy
        # of this dataset they were started with: the epoch lives in shared
        # memory so that set_epoch() in the trainer reaches every worker.
        self._epoch = torch.ones(1, dtype=torch.long).share_memory_()

    @property
    def epoch(self) -> int:
        return int(self._epoch[0])

    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        self._epoch.fill_(epoch)

    def __len__(self):
        return len(self.dataset)

    def sentence_index(self, slot):
        """The sentence behind a slot (an int or an array of them)."""
        return slot % len(self.dataset)

    def __getitem__(self, index):
        epoch = 0 if self.deterministic else self.epoch
        rng = _GENERATORS.get(self.seed, epoch, int(index))
        tokens = self.dataset[self.sentence_index(int(index))]
        masked = mask_sentence(
            tokens.numpy(),
            rng,
            mask_idx=self.mask_idx,
            bos_idx=self.dictionary.eos(),
            random_token_ids=self.random_token_ids,
            **self.mask_args,
        )
        prev_output_tokens = masked.prev_output_tokens
        if self.decoder_noise:
            prev_output_tokens = noise_decoder_input(
                prev_output_tokens, rng, mask_idx=self.mask_idx,
                random_token_ids=self.random_token_ids, **self.decoder_noise)
        item = {
            "id": index,
            "source": torch.from_numpy(masked.source),
            "prev_output_tokens": torch.from_numpy(prev_output_tokens),
            "target": torch.from_numpy(masked.target),
            "positions": torch.from_numpy(masked.positions),
        }
        if self.return_raw:
            item["raw"] = tokens
        return item

    def collater(self, samples):
        if len(samples) == 0:
            return {}
        pad = self.dictionary.pad()

        def merge(key, pad_value=pad):
            return _right_padded([s[key] for s in samples], pad_value)

        ids = torch.LongTensor([s["id"] for s in samples])
        sentence_ids = self.sentence_index(ids.numpy())
        target = merge("target")
        batch = {
            "id": ids,
            "nsentences": len(samples),
            # the loss is over the targets that are not padding, so they are
            # what we count: the masked tokens (with feed_unmasked the other
            # targets are padding), or every token with reconstruct_sentence
            "ntokens": int(target.ne(pad).sum()),
            "net_input": {
                "src_tokens": merge("source"),
                "src_lengths": torch.LongTensor([len(s["source"]) for s in samples]),
                "prev_output_tokens": merge("prev_output_tokens"),
                "positions": merge("positions", PAD_POSITION),
            },
            "target": target,
        }
        if self.lang_ids is not None:
            batch["net_input"]["src_lang_id"] = torch.from_numpy(self.lang_ids[sentence_ids])
        if self.return_raw:
            batch["raw"] = {
                "src_tokens": merge("raw"),
                "src_lengths": torch.LongTensor([len(s["raw"]) for s in samples]),
            }
            if self.lang_ids is not None:
                batch["raw"]["lang_id"] = batch["net_input"]["src_lang_id"]
        return batch

    def num_tokens(self, index):
        return self.sizes[self.sentence_index(index)]

    def num_tokens_vec(self, indices):
        return self.sizes[self.sentence_index(indices)]

    def size(self, index):
        # the decoder uses positions up to the sentence length, so both the
        # source and the target limits apply to it
        size = self.sizes[self.sentence_index(index)]
        return (size, size)

    def filter_indices_by_size(self, indices, max_sizes):
        if isinstance(max_sizes, (int, float)):
            limit = max_sizes
        else:
            limit = min(size for size in max_sizes if size is not None)
        too_long = self.num_tokens_vec(indices) > limit
        return indices[~too_long], self.sentence_index(indices[too_long]).tolist()

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        # resampled epochs hold other sentences: fairseq must ask again
        return not self.lang_sample_sizes

    def ordered_indices(self):
        # fairseq calls this inside data_utils.numpy_seed(seed + epoch)
        if self.lang_sample_sizes:
            order = self._resampled_slots()
        elif self.shuffle:
            order = np.random.permutation(len(self))
        else:
            order = np.arange(len(self))
        return order[np.argsort(self.num_tokens_vec(order), kind="mergesort")]

    def _resampled_slots(self):
        rng = np.random.default_rng((self.seed, self.epoch, 0x1A96))
        chosen = []
        for lang_id, count in sorted(self.lang_sample_sizes.items()):
            pool = np.flatnonzero(self.lang_ids == lang_id)
            chosen.append(rng.choice(pool, size=count, replace=count > len(pool)))
        order = np.concatenate(chosen)
        if self.shuffle:
            order = rng.permutation(order)
        return order + copy_numbers(order) * len(self.dataset)

    @property
    def supports_prefetch(self):
        return getattr(self.dataset, "supports_prefetch", False)

    def prefetch(self, indices):
        self.dataset.prefetch(np.unique(self.sentence_index(np.asarray(indices))))
