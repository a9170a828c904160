"""Task ``unsupervised_translation``: MASS, denoising and online back-translation.

One ``fairseq-train`` run over monolingual text in two languages. Every
update takes one batch of sentences (both languages mixed) and sums, with
weights that may follow a schedule,

* the MASS loss of the batch (its masked spans),
* optionally (``--lambda-dae``) the denoising auto-encoding loss: each
  sentence is restored from a locally shuffled copy with some words dropped
  and some blanked (Lample et al., 2018), and
* the back-translation loss: each sentence (language ``l``) is first
  translated into the other language ``l'`` by the current model, without
  gradient (greedy or a small beam), and the model then learns to translate
  that synthetic ``l'`` sentence back into the original,

then calls ``backward`` once. Every rank runs the same step types on every
update, so distributed training never waits for gradients another rank did
not produce. Language embeddings (see ``--language-embeddings`` of
``transformer_mass``) tell the encoder the source language and the decoder
the language to produce.

Validation translates a parallel valid set in both directions and reports
``bleu_<src>_<tgt>`` and their mean ``bleu`` (usable as
``--best-checkpoint-metric bleu --maximize-best-checkpoint-metric``); with
``-s``/``-t`` the task evaluates and generates one direction, which is how
``fairseq-generate`` / ``fairseq-interactive`` use it.

This module holds the options, their checks and the data loading; the update
and the batches it builds are in :mod:`mass_plugin.tasks.unsupervised_training`,
validation and metrics in :mod:`mass_plugin.tasks.unsupervised_validation`.
"""

import logging
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

from fairseq import utils
from fairseq.data import RoundRobinZipDatasets, data_utils
from fairseq.tasks import FairseqTask, register_task

from ..data.binarized_files import check_binarized
from ..data.denoising import SentenceNoise
from ..data.language_pair import LanguagePairWithIdsDataset
from ..data.masked_s2s_dataset import MaskedS2SDataset
from .masked_s2s import MaskedS2SConfig, MaskedS2STask
from .unsupervised_training import TrainingStepsMixin, step_weights
from .unsupervised_validation import BleuValidationMixin

logger = logging.getLogger(__name__)


@dataclass
class UnsupervisedTranslationConfig(MaskedS2SConfig):
    source_lang: Optional[str] = field(
        default=None,
        metadata={
            "help": "source language: validate and generate only this direction "
            "(fairseq-generate / fairseq-interactive); by default validation "
            "covers both directions",
            "argparse_alias": "-s",
        },
    )
    target_lang: Optional[str] = field(
        default=None,
        metadata={"help": "target language, with -s", "argparse_alias": "-t"},
    )
    lambda_mass: str = field(
        default="1",
        metadata={
            "help": "weight of the MASS loss: a number, or a schedule "
            "'update:weight,...' interpolated linearly, e.g. '0:1,10000:0.1'"
        },
    )
    lambda_bt: str = field(
        default="1",
        metadata={
            "help": "weight of the online back-translation loss, same format; "
            "'0:0,2000:0,3000:1' starts back-translation at update 2000 and "
            "ramps it up (useful from random initialisation)"
        },
    )
    lambda_dae: str = field(
        default="0",
        metadata={
            "help": "weight of the denoising auto-encoding loss (restore each "
            "sentence from a noised copy, see --dae-word-*), same format; 0 (the "
            "default) leaves it out"
        },
    )
    dae_word_shuffle: float = field(
        default=3.0,
        metadata={"help": "denoising: words move by fewer than this many positions "
                  "(0: no shuffling, else above 1)"},
    )
    dae_word_dropout: float = field(
        default=0.1, metadata={"help": "denoising: probability of dropping a word"}
    )
    dae_word_blank: float = field(
        default=0.1,
        metadata={"help": "denoising: probability of replacing a word by <mask>"},
    )
    dae_words: str = field(
        default="sentencepiece",
        metadata={"help": "how words are found among subwords for the noise: "
                  "'sentencepiece' (a piece starting with \u2581 begins a word), "
                  "'@@' (subword-nmt) or 'tokens' (each token is a word)"},
    )
    bt_beam: int = field(
        default=1, metadata={"help": "beam size of back-translation (1 = greedy)"}
    )
    bt_sampling_topk: int = field(
        default=0,
        metadata={"help": "back-translate by sampling each token from the k most "
                  "likely (-1: from all) instead of greedy/beam search (0, the default); "
                  "drawn from --seed and the update, like dropout"},
    )
    bt_max_len_a: float = field(
        default=1.3,
        metadata={"help": "back-translations have at most a * source length + b tokens"},
    )
    bt_max_len_b: int = field(default=5, metadata={"help": "see --bt-max-len-a"})
    eval_bleu: bool = field(
        default=False, metadata={"help": "translate the valid set and report BLEU"}
    )
    eval_bleu_remove_bpe: Optional[str] = field(
        default=None,
        metadata={
            "help": "remove subwords before scoring, as in fairseq-generate "
            "--remove-bpe (e.g. 'sentencepiece')",
            "argparse_const": "@@ ",
        },
    )
    eval_bleu_beam: int = field(default=1, metadata={"help": "beam size for --eval-bleu"})
    eval_bleu_print_samples: bool = field(
        default=False, metadata={"help": "log one translation per direction"}
    )


@register_task("unsupervised_translation", dataclass=UnsupervisedTranslationConfig)
class UnsupervisedTranslationTask(BleuValidationMixin, TrainingStepsMixin, MaskedS2STask):
    """MASS pre-training and online back-translation between two languages.

    Data (``mass-binarize --langs L1,L2 --pair L1-L2``): training
    reads ``train.L1`` and ``train.L2`` (monolingual); a split such as
    ``valid`` reads the parallel ``valid.L1-L2.{L1,L2}``; a split named
    ``valid.L1`` gives the MASS loss of that language instead.
    """

    cfg: UnsupervisedTranslationConfig
    NAME = "unsupervised_translation"

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary)
        if len(self.langs) != 2:
            raise ValueError(
                "unsupervised_translation needs --langs with two languages, e.g. "
                f"--langs en,fr (got {cfg.langs!r})"
            )
        if (cfg.source_lang is None) != (cfg.target_lang is None):
            raise ValueError("give both -s and -t, or neither")
        for flag, lang in (("-s", cfg.source_lang), ("-t", cfg.target_lang)):
            if lang is not None and lang not in self.langs:
                raise ValueError(f"{flag} {lang} is not one of --langs {cfg.langs}")
        if cfg.source_lang is not None and cfg.source_lang == cfg.target_lang:
            raise ValueError("-s and -t must differ")
        self.lambdas = step_weights(cfg)
        try:
            self.noise = SentenceNoise(
                dictionary, self.mask_idx, shuffle=cfg.dae_word_shuffle,
                dropout=cfg.dae_word_dropout, blank=cfg.dae_word_blank, words=cfg.dae_words)
        except ValueError as error:
            raise ValueError(f"--dae-*: {error}") from error
        if cfg.bt_sampling_topk < -1 or (cfg.bt_sampling_topk and cfg.bt_beam != 1):
            raise ValueError("--bt-sampling-topk: give k > 0, -1 for the whole "
                             "distribution, or 0 for search; sampling needs --bt-beam 1")
        self._generators = {}

    # ----------------------------------------------------------------- data

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        if split == self.cfg.train_subset:
            dataset = self.load_masked_dataset(split, epoch, combine, return_raw=True)
        elif split.rsplit(".", 1)[-1] in self.langs:
            dataset = self.load_masked_dataset(split, epoch, combine)
        elif self.cfg.source_lang is not None:
            dataset = self._load_pair(split, self.cfg.source_lang, self.cfg.target_lang)
        else:
            first, second = self.langs
            dataset = RoundRobinZipDatasets(OrderedDict(
                (f"{src}-{tgt}", self._load_pair(split, src, tgt))
                for src, tgt in ((first, second), (second, first))
            ))
        self.datasets[split] = dataset

    def _load_pair(self, split, src, tgt):
        data_path = utils.split_paths(self.cfg.data)[0]
        for pair in (f"{src}-{tgt}", f"{tgt}-{src}"):
            prefix = os.path.join(data_path, f"{split}.{pair}.")
            for lang in (src, tgt):
                check_binarized(prefix + lang, rebuild=(
                    f"mass-binarize --langs {','.join(self.langs)} --pair {pair} "
                    f"--{split} RAW_PREFIX --dict {data_path}/dict.txt "
                    f"--destdir {data_path}"))
            src_data = data_utils.load_indexed_dataset(
                prefix + src, self.dictionary, self.cfg.dataset_impl)
            tgt_data = data_utils.load_indexed_dataset(
                prefix + tgt, self.dictionary, self.cfg.dataset_impl)
            if src_data is not None and tgt_data is not None:
                break
        else:
            raise FileNotFoundError(
                f"unsupervised_translation: no parallel '{split}' data for {src}-{tgt} "
                f"(expected {os.path.join(data_path, f'{split}.{src}-{tgt}.{src}')}.bin "
                "and .idx; mass-binarize --pair writes them). Without parallel "
                "data validate the MASS loss with --valid-subset "
                + ",".join(f"{split}.{lang}" for lang in self.langs)
            )
        logger.info(f"{split} {src}->{tgt}: {len(src_data)} sentence pairs")
        return LanguagePairWithIdsDataset(
            src_data, src_data.sizes, self.dictionary, tgt_data, tgt_data.sizes,
            self.dictionary, src_lang_id=self.langs.index(src),
            tgt_lang_id=self.langs.index(tgt),
        )

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        if self.cfg.source_lang is None:
            raise ValueError(
                "unsupervised_translation: choose the direction with -s and -t "
                f"(languages: {','.join(self.langs)})"
            )
        return LanguagePairWithIdsDataset(
            src_tokens, src_lengths, self.dictionary, constraints=constraints,
            src_lang_id=self.langs.index(self.cfg.source_lang),
            tgt_lang_id=self.langs.index(self.cfg.target_lang),
        )

    def filter_indices_by_size(self, indices, dataset, max_positions=None,
                               ignore_invalid_inputs=False):
        if isinstance(dataset, MaskedS2SDataset):
            return super().filter_indices_by_size(
                indices, dataset, max_positions, ignore_invalid_inputs)
        return FairseqTask.filter_indices_by_size(
            self, indices, dataset, max_positions, ignore_invalid_inputs)
