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
"""

import logging
import math
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
from fairseq import search, utils
from fairseq.data import (
    LanguagePairDataset,
    RoundRobinZipDatasets,
    data_utils,
)
from fairseq.logging import metrics
from fairseq.sequence_generator import SequenceGenerator
from fairseq.tasks import FairseqTask, register_task
from fairseq.tasks.online_backtranslation import PiecewiseLinearFn

from ..data.binarized_files import check_binarized
from ..data.denoising import SentenceNoise
from ..data.masked_s2s_dataset import MaskedS2SDataset
from .masked_s2s import MaskedS2SConfig, MaskedS2STask

logger = logging.getLogger(__name__)

STEP_TYPES = ("mass", "dae", "bt")


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


class LanguagePairWithIdsDataset(LanguagePairDataset):
    """fairseq's :class:`LanguagePairDataset` whose batches also name the
    source and target language (``net_input``'s ``src_lang_id``/``tgt_lang_id``,
    one id per sentence).

    The ids are kept under names of our own: fairseq's collater reads
    ``self.src_lang_id``/``self.tgt_lang_id`` and, when they are set, adds
    ``expand``-ed (B, 1) tensors whose elements share one memory location,
    which the DataLoader's ``pin_memory`` (on whenever CUDA is available)
    refuses to copy."""

    def __init__(self, *args, src_lang_id, tgt_lang_id, **kwargs):
        super().__init__(*args, **kwargs)
        self.src_lang_index = src_lang_id
        self.tgt_lang_index = tgt_lang_id

    def collater(self, samples, pad_to_length=None):
        batch = super().collater(samples, pad_to_length=pad_to_length)
        if "net_input" in batch:
            n = batch["net_input"]["src_tokens"].size(0)
            batch["net_input"]["src_lang_id"] = torch.full((n,), self.src_lang_index)
            batch["net_input"]["tgt_lang_id"] = torch.full((n,), self.tgt_lang_index)
        return batch


def unwrap_model(model):
    """The FairseqModel inside fairseq's distributed wrappers."""
    while hasattr(model, "module"):
        model = model.module
    return model


@register_task("unsupervised_translation", dataclass=UnsupervisedTranslationConfig)
class UnsupervisedTranslationTask(MaskedS2STask):
    """MASS pre-training and online back-translation between two languages.

    Data (``data-prep/binarize.py --langs L1,L2 --pair L1-L2``): training
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
        self.lambdas = {}
        for name in STEP_TYPES:
            flag = f"--lambda-{name}"
            try:
                self.lambdas[name] = PiecewiseLinearFn.from_string(getattr(cfg, f"lambda_{name}"))
            except (AssertionError, ValueError) as error:
                raise ValueError(
                    f"{flag}: expected a number or 'update:weight,update:weight,...' "
                    f"with increasing updates, got {getattr(cfg, f'lambda_{name}')!r}"
                ) from error
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
                    f"data-prep/binarize.py --langs {','.join(self.langs)} --pair {pair} "
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
                "and .idx; data-prep/binarize.py --pair writes them). Without parallel "
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

    # ------------------------------------------------------------- training

    def _generator(self, model, beam, sampling_topk=0):
        """Beam search (greedy for beam 1), or sampling from the k most likely
        tokens for ``sampling_topk`` k > 0 (-1: from all)."""
        model = unwrap_model(model)
        key = (id(model), beam, sampling_topk)
        if key not in self._generators:
            strategy = None
            if sampling_topk:
                strategy = search.Sampling(self.dictionary, sampling_topk=sampling_topk)
            self._generators[key] = SequenceGenerator(
                [model], self.dictionary, beam_size=beam,
                max_len_a=self.cfg.bt_max_len_a, max_len_b=self.cfg.bt_max_len_b,
                search_strategy=strategy,
            )
        return self._generators[key]

    def backtranslation_sample(self, model, sample):
        """The back-translation batch of a training batch: the current model
        translates each (unmasked) sentence into the other language, without
        gradient; the synthetic sentence is the source, the original the target."""
        raw = sample["raw"]
        lang = raw["lang_id"]
        other = 1 - lang
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                hypos = self._generator(model, self.cfg.bt_beam,
                                         self.cfg.bt_sampling_topk).generate(
                    [unwrap_model(model)],
                    {"net_input": {"src_tokens": raw["src_tokens"],
                                   "src_lengths": raw["src_lengths"],
                                   "src_lang_id": lang, "tgt_lang_id": other}},
                )
        finally:
            model.train(was_training)
        synthetic = [hypo[0]["tokens"] for hypo in hypos]
        return self._reconstruction_sample(sample, _originals(raw), synthetic, other)

    def denoising_sample(self, sample, update_num):
        """The denoising batch of a training batch: each (unmasked) sentence,
        shuffled, with words dropped and blanked (``--dae-*``), is the source;
        the sentence itself, in the same language, is the target. The noise
        is seeded by ``--seed`` and the update, so a resumed run draws the same."""
        raw = sample["raw"]
        originals = _originals(raw)
        with data_utils.numpy_seed(self.cfg.seed, update_num):
            noisy = [self.noise(tokens) for tokens in originals]
        return self._reconstruction_sample(sample, originals, noisy, raw["lang_id"])

    def _reconstruction_sample(self, sample, originals, sources, src_lang_id):
        """A batch that restores each original sentence of ``sample`` (in its
        own language) from ``sources[i]`` (in language ``src_lang_id[i]``)."""
        raw = sample["raw"]
        pad, eos = self.dictionary.pad(), self.dictionary.eos()
        target = data_utils.collate_tokens(originals, pad, eos)
        return {
            "id": sample["id"],
            "nsentences": len(originals),
            "ntokens": int(raw["src_lengths"].sum()),
            "net_input": {
                "src_tokens": data_utils.collate_tokens(sources, pad, eos, left_pad=True),
                "src_lengths": torch.tensor([len(s) for s in sources],
                                            device=target.device),
                "prev_output_tokens": data_utils.collate_tokens(
                    originals, pad, eos, move_eos_to_beginning=True),
                "src_lang_id": src_lang_id,
                "tgt_lang_id": raw["lang_id"],
            },
            "target": target,
        }

    def train_step(self, sample, model, criterion, optimizer, update_num,
                   ignore_grad=False):
        """One update: weighted MASS and back-translation losses, each
        averaged over its tokens, summed, and one ``backward``."""
        model.train()
        model.set_num_updates(update_num)
        weights = {name: self.lambdas[name](update_num) for name in STEP_TYPES}
        # the MASS batch runs even at weight 0, which keeps every parameter in
        # the graph (distributed training expects a gradient for each)
        batches = {"mass": sample}
        if weights["dae"]:
            batches["dae"] = self.denoising_sample(sample, update_num)
        if weights["bt"]:
            batches["bt"] = self.backtranslation_sample(model, sample)
        total = 0.0
        log = {"nsentences": sample["nsentences"], "sample_size": 1,
               "loss": 0.0, "nll_loss": 0.0, "ntokens": 0}
        for name, batch in batches.items():
            loss, _, out = criterion(model, batch)
            total = total + weights[name] * loss / max(out["ntokens"], 1)
            log[f"{name}_loss"] = out["loss"]
            log[f"{name}_ntokens"] = out["ntokens"]
            log["nll_loss"] += out["nll_loss"]
            log["ntokens"] += out["ntokens"]
            if name == "mass":
                log["span_correct"] = out["span_correct"]
                log["span_total"] = out["span_total"]
        if ignore_grad:
            total = total * 0.0
        optimizer.backward(total)
        # "loss" is the weighted sum of per-token losses, averaged over the
        # batches of the update (sample_size 1 each); nll_loss is per token
        log["loss"] = total.detach()
        return total, 1, log

    # ----------------------------------------------------------- validation

    def valid_step(self, sample, model, criterion):
        if "net_input" in sample:
            if "raw" in sample or "positions" in sample["net_input"]:
                return super().valid_step(sample, model, criterion)  # MASS loss
            direction = f"{self.cfg.source_lang}-{self.cfg.target_lang}"
            sample = {direction: sample}
        total_loss, total_size, log = 0.0, 0, {}
        for direction, batch in sample.items():
            if not batch:
                continue
            loss, size, out = super().valid_step(batch, model, criterion)
            total_loss += loss
            total_size += size
            for key, value in out.items():
                log[key] = log.get(key, 0) + value
            if self.cfg.eval_bleu:
                log.update(self._bleu_stats(direction, batch, model))
        return total_loss, total_size, log

    def _bleu_stats(self, direction, batch, model):
        import sacrebleu

        def decode(tokens, unk):
            return self.dictionary.string(tokens.int().cpu(), self.cfg.eval_bleu_remove_bpe,
                                          unk_string=unk)

        hypos = self.inference_step(self._generator(model, self.cfg.eval_bleu_beam),
                                    [unwrap_model(model)], batch)
        hyps = [decode(h[0]["tokens"], "UNKNOWNTOKENINHYP") for h in hypos]
        refs = [decode(utils.strip_pad(t, self.dictionary.pad()), "UNKNOWNTOKENINREF")
                for t in batch["target"]]
        if self.cfg.eval_bleu_print_samples:
            logger.info(f"{direction} hypothesis: {hyps[0]}")
            logger.info(f"{direction} reference:  {refs[0]}")
        bleu = sacrebleu.corpus_bleu(hyps, [refs])
        key = "_bleu_" + direction.replace("-", "_")
        stats = {f"{key}_sys_len": bleu.sys_len, f"{key}_ref_len": bleu.ref_len}
        for i in range(4):
            stats[f"{key}_counts_{i}"] = bleu.counts[i]
            stats[f"{key}_totals_{i}"] = bleu.totals[i]
        return stats

    def reduce_metrics(self, logging_outputs, criterion):
        super().reduce_metrics(logging_outputs, criterion)

        def total(key):
            return utils.item(sum(log.get(key, 0) for log in logging_outputs))

        for name in STEP_TYPES:
            ntokens = total(f"{name}_ntokens")
            if ntokens:
                metrics.log_scalar(f"{name}_loss",
                                   total(f"{name}_loss") / ntokens / math.log(2),
                                   ntokens, round=3)
        directions = sorted({key[len("_bleu_"):-len("_sys_len")]
                             for log in logging_outputs for key in log
                             if key.startswith("_bleu_") and key.endswith("_sys_len")})
        for direction in directions:
            key = f"_bleu_{direction}"
            metrics.log_scalar(f"{key}_counts", np.array([total(f"{key}_counts_{i}")
                                                           for i in range(4)]))
            metrics.log_scalar(f"{key}_totals", np.array([total(f"{key}_totals_{i}")
                                                           for i in range(4)]))
            metrics.log_scalar(f"{key}_sys_len", total(f"{key}_sys_len"))
            metrics.log_scalar(f"{key}_ref_len", total(f"{key}_ref_len"))
            metrics.log_derived(f"bleu_{direction}", _derived_bleu(key))
        if directions:
            names = [f"_bleu_{direction}" for direction in directions]
            metrics.log_derived(
                "bleu", lambda meters: round(
                    sum(_derived_bleu(name)(meters) for name in names) / len(names), 2))


def _originals(raw):
    """The unpadded sentences of a batch's ``raw`` part."""
    return [row[:n] for row, n in zip(raw["src_tokens"], raw["src_lengths"].tolist())]


def _derived_bleu(key):
    def compute(meters):
        from sacrebleu.metrics import BLEU

        counts = meters[f"{key}_counts"].sum
        totals = meters[f"{key}_totals"].sum
        if totals[0] == 0:
            return 0.0
        score = BLEU.compute_bleu(
            correct=counts, total=totals, sys_len=int(meters[f"{key}_sys_len"].sum),
            ref_len=int(meters[f"{key}_ref_len"].sum), smooth_method="exp",
        )
        return round(score.score, 2)
    return compute

