"""Task ``masked_s2s``: MASS pre-training on fairseq-binarized monolingual text."""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from fairseq import utils
from fairseq.data import ConcatDataset, Dictionary, data_utils
from fairseq.data.indexed_dataset import dataset_exists, get_available_dataset_impl
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II, MISSING

from ..data.masked_s2s_dataset import MaskedS2SDataset
from ..data.masking import MASK_MODES, SPAN_STARTS
from ..models.transformer_mass import add_mask_symbol

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
            "predict, in (0, 1]: the span has max(1, round(m * ratio)) tokens; "
            "1 makes the encoder see only masks (a language model)"
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
            "'mass': 20%% at the first token, 20%% ending at the last, 60%% "
            "uniform"
        },
    )
    mask_mode: ChoiceEnum(MASK_MODES) = field(
        default="span",
        metadata={
            "help": "'span': one contiguous span (MASS); 'discrete': the same "
            "number of tokens at random, not contiguous (the paper's ablation)"
        },
    )
    langs: Optional[str] = field(
        default=None,
        metadata={
            "help": "comma-separated languages, e.g. 'en,fr': a split SPLIT "
            "without SPLIT.bin is read from SPLIT.en.bin, SPLIT.fr.bin, ... "
            "(the layout of data-prep/binarize.py); --valid-subset "
            "valid.en,valid.fr reports each language's loss"
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


def validate_masking_options(cfg) -> None:
    """Raise ValueError naming the flag when the masking options make no sense."""
    if not 0.0 < cfg.mask_ratio <= 1.0:
        raise ValueError(f"--mask-ratio must be in (0, 1], got {cfg.mask_ratio}")
    for flag, value in (("--random-token-prob", cfg.random_token_prob),
                        ("--leave-unmasked-prob", cfg.leave_unmasked_prob)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{flag} must be in [0, 1], got {value}")
    if cfg.random_token_prob + cfg.leave_unmasked_prob > 1.0:
        raise ValueError(
            "--random-token-prob + --leave-unmasked-prob must be at most 1 "
            f"(got {cfg.random_token_prob} + {cfg.leave_unmasked_prob}); "
            "the remaining share of masked positions becomes <mask>"
        )


@register_task("masked_s2s", dataclass=MaskedS2SConfig)
class MaskedS2STask(FairseqTask):
    """MASS: Masked Sequence to Sequence pre-training (Song et al., 2019).

    Each sentence of a monolingual corpus gets one span of
    ``round(mask_ratio * m)`` tokens masked in the encoder input; the decoder
    predicts the span from its original previous tokens, at the span's
    original positions. See :mod:`mass_plugin.data.masking`.
    """

    cfg: MaskedS2SConfig

    def __init__(self, cfg: MaskedS2SConfig, dictionary: Dictionary):
        super().__init__(cfg)
        validate_masking_options(cfg)
        self.dictionary = dictionary
        self.mask_idx = add_mask_symbol(dictionary)

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
        return data_utils.load_indexed_dataset(
            split_path, self.dictionary, self.cfg.dataset_impl, combine=combine
        )

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        paths = utils.split_paths(self.cfg.data)
        data_path = paths[(epoch - 1) % len(paths)]
        split_path = os.path.join(data_path, split)
        langs = [lang for lang in (self.cfg.langs or "").split(",") if lang]
        if langs and not dataset_exists(split_path, self.cfg.dataset_impl or "mmap"):
            parts = [self._load_sentences(f"{split_path}.{lang}", combine) for lang in langs]
            missing = [lang for lang, part in zip(langs, parts) if part is None]
            if missing:
                raise FileNotFoundError(
                    f"masked_s2s: --langs {self.cfg.langs}: no {split} data for "
                    f"{', '.join(missing)} (expected {split_path}.<lang>.bin/.idx, "
                    "as data-prep/binarize.py writes them)"
                )
            for lang, part in zip(langs, parts):
                logger.info(f"{split}.{lang}: {len(part)} sentences")
            sentences = ConcatDataset(parts)
        else:
            sentences = self._load_sentences(split_path, combine)
        if sentences is None:
            raise FileNotFoundError(
                f"masked_s2s: split '{split}' not found: expected {split_path}.bin "
                f"and {split_path}.idx. Create them with fairseq-preprocess "
                f"--only-source --trainpref/--validpref ... --destdir {data_path}"
            )
        is_train = split == self.cfg.train_subset
        self.datasets[split] = MaskedS2SDataset(
            sentences,
            sentences.sizes,
            self.dictionary,
            self.mask_idx,
            seed=self.cfg.seed,
            shuffle=is_train,
            deterministic=not is_train,
            mask_ratio=self.cfg.mask_ratio,
            random_token_prob=self.cfg.random_token_prob,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob,
            span_start=str(self.cfg.span_start),
            mask_mode=str(self.cfg.mask_mode),
        )
        logger.info(f"{split}: {len(sentences)} sentences from {split_path}")

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
