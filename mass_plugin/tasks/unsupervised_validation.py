"""Validation and metrics of task ``unsupervised_translation``.

A parallel valid set is scored in both directions (or in the one of
``-s``/``-t``): the loss of each, and with ``--eval-bleu`` the sacrebleu
statistics of its translations, summed over batches and workers into
``bleu_<src>_<tgt>`` and their mean ``bleu``. A monolingual valid split
gives the MASS loss. Training logs add each step type's loss per token
(``mass_loss``, ``dae_loss``, ``bt_loss``).
"""

import logging
import math

import numpy as np
from fairseq import utils
from fairseq.logging import metrics

from .unsupervised_training import STEP_TYPES, unwrap_model

# the task's logger: the samples that --eval-bleu-print-samples logs keep its name
logger = logging.getLogger("mass_plugin.tasks.unsupervised_translation")


class BleuValidationMixin:
    """``valid_step`` and ``reduce_metrics`` of
    :class:`UnsupervisedTranslationTask`; reads the task's ``cfg`` and
    ``dictionary`` and translates with its ``_generator``."""

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
