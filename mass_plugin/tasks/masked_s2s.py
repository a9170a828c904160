"""Task ``masked_s2s``: MASS pre-training on fairseq-binarized monolingual text."""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from fairseq import utils
from fairseq.data import ConcatDataset, Dictionary, data_utils
from fairseq.data.indexed_dataset import dataset_exists, get_available_dataset_impl
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II, MISSING

from ..data.binarized_files import check_binarized
from ..data.dictionary import add_mask_symbol
from ..data.masked_s2s_dataset import MaskedS2SDataset
from ..data.masking import MASK_MODES, SPAN_STARTS

logger = logging.getLogger(__name__)


@dataclass
class MaskedS2SConfig(FairseqDataclass):
    data: str = field(
        default=MISSING,
        metadata={
            "help": "directory of fairseq-preprocess --only-source output "
            "(dict.txt, train.bin/.idx, valid.bin/.idx); several directories "
            "separated by ':' are used in turn, one per epoch"
        },
    )
    mask_ratio: float = field(
        default=0.5,
        metadata={
            "help": "fraction of each sentence (</s> included) to mask and "
            "predict, in [0, 1]: the span has max(1, round(m * ratio)) tokens; "
            "the end points are the paper's special cases: 0 masks one token "
            "(k=1, BERT-like), 1 the whole sentence (k=m: the decoder predicts "
            "every token, a language model). Masked positions follow "
            "--random-token-prob / --leave-unmasked-prob also at 1, so by default "
            "the encoder still sees about 10%% of the tokens unchanged and 10%% "
            "replaced at random; add --random-token-prob 0 --leave-unmasked-prob 0 "
            "for an encoder input of masks only"
        },
    )
    random_token_prob: float = field(
        default=0.1,
        metadata={
            "help": "share of masked positions replaced by a random ordinary "
            "token in the encoder input"
        },
    )
    leave_unmasked_prob: float = field(
        default=0.1,
        metadata={
            "help": "share of masked positions left unchanged in the encoder "
            "input; the rest become <mask>"
        },
    )
    span_start: ChoiceEnum(SPAN_STARTS) = field(
        default="uniform",
        metadata={
            "help": "where spans start: 'uniform' over all valid starts, or "
            "'mass', what both original MASS codes do: 20%% of spans start at the "
            "first token, 20%% end at the last (the final </s>), 60%% start "
            "uniformly (as MASS-unsupNMT: both ends included; MASS-supNMT leaves "
            "out the last start there). With --mask-mode span only"
        },
    )
    mask_mode: ChoiceEnum(MASK_MODES) = field(
        default="span",
        metadata={
            "help": "'span': one contiguous span (MASS); 'discrete': the same "
            "number of tokens at random, not contiguous (the paper's ablation)"
        },
    )
    feed_unmasked: bool = field(
        default=False,
        metadata={
            "help": "the paper's 'feed' ablation: the decoder input is the whole "
            "sentence, so the decoder also sees the tokens the encoder saw; "
            "the loss stays on the masked tokens"
        },
    )
    reconstruct_sentence: bool = field(
        default=False,
        metadata={
            "help": "the decoder input is the whole sentence (as --feed-unmasked) "
            "and the decoder predicts every token of it, not only the masked "
            "ones: a denoising auto-encoder whose noise is MASS's encoder masking"
        },
    )
    decoder_mask_prob: float = field(
        default=0.0,
        metadata={
            "help": "share of the decoder's input tokens replaced by <mask> (the "
            "targets stay clean). MASS-supNMT uses 0.1, with 0.1 of "
            "--decoder-random-token-prob; MASS-unsupNMT and the default: 0"
        },
    )
    decoder_random_token_prob: float = field(
        default=0.0,
        metadata={
            "help": "share of the decoder's input tokens replaced by a random "
            "ordinary token (the targets stay clean). MASS-supNMT uses 0.1; "
            "MASS-unsupNMT and the default: 0"
        },
    )
    langs: Optional[str] = field(
        default=None,
        metadata={
            "help": "comma-separated languages, e.g. 'en,fr': a split SPLIT "
            "without SPLIT.bin is read from SPLIT.en.bin, SPLIT.fr.bin, ... "
            "(the layout of mass-binarize); --valid-subset "
            "valid.en,valid.fr reports each language's loss"
        },
    )
    lang_sampling_alpha: float = field(
        default=1.0,
        metadata={
            "help": "with --langs: each training epoch draws from language l a "
            "share of sentences proportional to n_l ** alpha (n_l its sentence "
            "count); 1 uses every sentence once, smaller values up-sample the "
            "smaller languages (batches mix languages either way)"
        },
    )
    max_source_positions: int = field(
        default=1024, metadata={"help": "max number of tokens in a sentence"}
    )
    max_target_positions: int = field(
        default=1024,
        metadata={
            "help": "max decoder position; span tokens keep their sentence "
            "positions, so sentences longer than this are also skipped"
        },
    )
    seed: int = II("common.seed")
    train_subset: str = II("dataset.train_subset")
    dataset_impl: Optional[ChoiceEnum(get_available_dataset_impl())] = II(
        "dataset.dataset_impl"
    )


def _check_shares(first, second, remainder) -> None:
    """Two (flag, value) probabilities, each in [0, 1], summing to at most 1."""
    for flag, value in (first, second):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{flag} must be in [0, 1], got {value}")
    if first[1] + second[1] > 1.0:
        raise ValueError(
            f"{first[0]} + {second[0]} must be at most 1 (got {first[1]} + "
            f"{second[1]}); {remainder}"
        )


def validate_masking_options(cfg) -> None:
    """Raise ValueError naming the flag when the masking options make no sense."""
    if not 0.0 <= cfg.mask_ratio <= 1.0:
        raise ValueError(
            f"--mask-ratio must be in [0, 1] (0: one token per sentence, 1: all "
            f"of it), got {cfg.mask_ratio}"
        )
    _check_shares(("--random-token-prob", cfg.random_token_prob),
                  ("--leave-unmasked-prob", cfg.leave_unmasked_prob),
                  "the remaining share of masked positions becomes <mask>")
    _check_shares(("--decoder-mask-prob", cfg.decoder_mask_prob),
                  ("--decoder-random-token-prob", cfg.decoder_random_token_prob),
                  "the remaining share of the decoder's input stays unchanged")
    if str(cfg.span_start) == "mass" and str(cfg.mask_mode) != "span":
        raise ValueError(
            f"--span-start mass places one span; --mask-mode {cfg.mask_mode} has no "
            "span to place: leave --span-start out (or use --mask-mode span)"
        )


def language_sample_sizes(counts, alpha):
    """Sentences per language for one epoch: the epoch keeps its total size,
    shared in proportion to ``count ** alpha`` (XLM's language sampling)."""
    weights = np.asarray(counts, dtype=np.float64) ** alpha
    shares = weights / weights.sum()
    return {i: max(1, int(round(share * sum(counts)))) for i, share in enumerate(shares)}


@register_task("masked_s2s", dataclass=MaskedS2SConfig)
class MaskedS2STask(FairseqTask):
    """MASS: Masked Sequence to Sequence pre-training (Song et al., 2019).

    Each sentence of a monolingual corpus gets one span of
    ``round(mask_ratio * m)`` tokens masked in the encoder input; the decoder
    predicts the span from its original previous tokens, at the span's
    original positions. See :mod:`mass_plugin.data.masking`.
    """

    cfg: MaskedS2SConfig
    NAME = "masked_s2s"

    def __init__(self, cfg: MaskedS2SConfig, dictionary: Dictionary):
        super().__init__(cfg)
        validate_masking_options(cfg)
        self.dictionary = dictionary
        self.mask_idx = add_mask_symbol(dictionary)
        # the model gives each of these a language embedding when there are two or more
        self.langs = [lang for lang in (cfg.langs or "").split(",") if lang]
        if len(set(self.langs)) != len(self.langs):
            raise ValueError(f"--langs lists a language twice: {cfg.langs}")

    @classmethod
    def setup_task(cls, cfg: MaskedS2SConfig, **kwargs):
        paths = utils.split_paths(cfg.data)
        if not paths:
            raise ValueError("masked_s2s needs a data directory (the first argument)")
        dict_path = os.path.join(paths[0], "dict.txt")
        if not os.path.exists(dict_path):
            raise FileNotFoundError(
                f"masked_s2s: no dictionary at {dict_path}. Binarize the text "
                f"with fairseq-preprocess --only-source --destdir {paths[0]} ..."
            )
        dictionary = Dictionary.load(dict_path)
        logger.info(f"dictionary: {len(dictionary)} types from {dict_path}")
        return cls(cfg, dictionary)

    def _load_sentences(self, split_path, combine):
        check_binarized(split_path, rebuild=(
            "binarize the text again with fairseq-preprocess --only-source "
            f"--srcdict DICT --destdir {os.path.dirname(split_path)} ..., or with "
            "mass-binarize --langs ... --dict DICT, which writes SPLIT.LANG"))
        return data_utils.load_indexed_dataset(
            split_path, self.dictionary, self.cfg.dataset_impl, combine=combine
        )

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        self.datasets[split] = self.load_masked_dataset(split, epoch, combine)

    def load_masked_dataset(self, split, epoch=1, combine=False, return_raw=False):
        paths = utils.split_paths(self.cfg.data)
        data_path = paths[(epoch - 1) % len(paths)]
        split_path = os.path.join(data_path, split)
        langs = self.langs
        lang_ids = None
        sample_sizes = None
        if langs and not dataset_exists(split_path, self.cfg.dataset_impl or "mmap"):
            parts = [self._load_sentences(f"{split_path}.{lang}", combine) for lang in langs]
            missing = [lang for lang, part in zip(langs, parts) if part is None]
            if missing:
                raise FileNotFoundError(
                    f"{self.NAME}: --langs {self.cfg.langs}: no {split} data for "
                    f"{', '.join(missing)} (expected {split_path}.<lang>.bin/.idx, "
                    "as mass-binarize writes them)"
                )
            for lang, part in zip(langs, parts):
                logger.info(f"{split}.{lang}: {len(part)} sentences")
            sentences = ConcatDataset(parts)
            lang_ids = np.repeat(np.arange(len(parts)), [len(part) for part in parts])
            if split == self.cfg.train_subset and self.cfg.lang_sampling_alpha != 1.0:
                sample_sizes = language_sample_sizes(
                    [len(part) for part in parts], self.cfg.lang_sampling_alpha)
                logger.info("sentences drawn per epoch: " + ", ".join(
                    f"{lang} {sample_sizes[i]}" for i, lang in enumerate(langs)))
        else:
            sentences = self._load_sentences(split_path, combine)
            suffix = split.rsplit(".", 1)[-1]
            if len(langs) >= 2 and suffix in langs:
                lang_ids = langs.index(suffix)  # e.g. valid.fr
        if sentences is None:
            raise FileNotFoundError(
                f"{self.NAME}: split '{split}' not found: expected {split_path}.bin "
                f"and {split_path}.idx. Create them with fairseq-preprocess "
                f"--only-source --trainpref/--validpref ... --destdir {data_path}"
            )
        if len(langs) < 2:
            lang_ids = None  # one language: no language embeddings
        is_train = split == self.cfg.train_subset
        logger.info(f"{split}: {len(sentences)} sentences from {split_path}")
        return MaskedS2SDataset(
            sentences,
            sentences.sizes,
            self.dictionary,
            self.mask_idx,
            seed=self.cfg.seed,
            shuffle=is_train,
            deterministic=not is_train,
            lang_ids=lang_ids,
            lang_sample_sizes=sample_sizes,
            return_raw=return_raw,
            mask_ratio=self.cfg.mask_ratio,
            random_token_prob=self.cfg.random_token_prob,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob,
            span_start=str(self.cfg.span_start),
            mask_mode=str(self.cfg.mask_mode),
            feed_unmasked=self.cfg.feed_unmasked,
            reconstruct_sentence=self.cfg.reconstruct_sentence,
            pad_idx=self.dictionary.pad(),
            decoder_mask_prob=self.cfg.decoder_mask_prob,
            decoder_random_token_prob=self.cfg.decoder_random_token_prob,
        )

    def filter_indices_by_size(self, indices, dataset, max_positions=None,
                               ignore_invalid_inputs=False):
        indices, ignored = dataset.filter_indices_by_size(indices, max_positions)
        if ignored and not ignore_invalid_inputs:
            longest = max(int(dataset.sizes[i]) for i in ignored)
            raise ValueError(
                f"masked_s2s: {len(ignored)} sentence(s) are longer than "
                f"--max-source-positions/--max-target-positions {max_positions} "
                f"(sentence #{ignored[0]} is one; the longest has up to {longest} tokens "
                "with </s>). "
                "Raise both limits (and use the same values when fine-tuning), split "
                "long lines before binarizing, or drop them with "
                "--skip-invalid-size-inputs-valid-test"
            )
        if ignored:
            logger.warning(f"skipping {len(ignored)} sentences longer than {max_positions}")
        return indices

    def max_positions(self):
        return (self.cfg.max_source_positions, self.cfg.max_target_positions)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
