"""Criterion ``masked_s2s_loss``: (label-smoothed) cross-entropy over span tokens."""

from dataclasses import dataclass, field

from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    label_smoothed_nll_loss,
)
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics
from omegaconf import II

from .chunked_cross_entropy import chunked_label_smoothed_ce


@dataclass
class MaskedS2SLossConfig(FairseqDataclass):
    label_smoothing: float = field(
        default=0.0,
        metadata={"help": "epsilon for label smoothing, 0 means no label smoothing"},
    )
    loss_chunk_tokens: int = field(
        default=0,
        metadata={"help": "compute the loss this many span tokens at a time, each chunk's "
                  "log-softmax in fp32 and its gradient written at once in the logits' "
                  "dtype (mass_plugin/criterions/chunked_cross_entropy.py): no fp32 copy "
                  "of all the logits under --fp16/--bf16; 0 (default): fairseq's "
                  "log-softmax over all of them"},
    )
    sentence_avg: bool = II("optimization.sentence_avg")


@register_criterion("masked_s2s_loss", dataclass=MaskedS2SLossConfig)
class MaskedS2SLoss(LabelSmoothedCrossEntropyCriterion):
    """The MASS loss: cross-entropy of the masked span given the encoder.

    The decoder outputs only span positions, so the loss, ``ntokens`` (the
    gradient denominator) and the logged ``span_acc`` cover span tokens and
    nothing else. Log-probabilities come from fairseq's fp32 log-softmax, so
    the loss is accumulated in fp32 under ``--fp16`` too; with
    ``--loss-chunk-tokens N`` they are computed N tokens at a time, with the
    same result and no fp32 copy of all the logits.
    """

    def __init__(self, task, sentence_avg, label_smoothing, loss_chunk_tokens=0):
        super().__init__(task, sentence_avg, label_smoothing, report_accuracy=False)
        if loss_chunk_tokens < 0:
            raise ValueError(f"--loss-chunk-tokens {loss_chunk_tokens}: give a number of "
                             "span tokens, or 0 for fairseq's log-softmax")
        self.loss_chunk_tokens = loss_chunk_tokens

    def span_loss(self, model, net_output, sample, reduce):
        """(loss, nll_loss, predicted token ids, targets), over the span tokens."""
        if self.loss_chunk_tokens and reduce:
            logits = net_output[0].reshape(-1, net_output[0].size(-1))
            target = model.get_targets(sample, net_output).reshape(-1)
            loss, nll_loss = chunked_label_smoothed_ce(
                logits, target, self.eps, self.padding_idx, self.loss_chunk_tokens)
            return loss, nll_loss, logits.argmax(-1), target
        # (B*k) x V in fp32, and (B*k) targets padded with padding_idx
        lprobs, target = self.get_lprobs_and_target(model, net_output, sample)
        loss, nll_loss = label_smoothed_nll_loss(
            lprobs, target, self.eps, ignore_index=self.padding_idx, reduce=reduce
        )
        return loss, nll_loss, lprobs.argmax(-1), target

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        loss, nll_loss, predicted, target = self.span_loss(model, net_output, sample, reduce)
        in_span = target.ne(self.padding_idx)
        n_correct = predicted.eq(target).logical_and(in_span).sum()
        nsentences = sample["target"].size(0)
        sample_size = nsentences if self.sentence_avg else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": nsentences,
            "sample_size": sample_size,
            # tensors: .item() here would make the CPU wait for the forward pass
            # on the GPU before it may issue the backward pass
            "span_correct": n_correct.detach(),
            "span_total": in_span.sum().detach(),
        }
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        # summed across ranks, the counts arrive as tensors: make them numbers
        total = utils.item(sum(log.get("span_total", 0) for log in logging_outputs))
        if total > 0:
            correct = utils.item(sum(log.get("span_correct", 0) for log in logging_outputs))
            # names starting with "_" are aggregated but not printed
            metrics.log_scalar_sum("_span_total", total)
            metrics.log_scalar_sum("_span_correct", correct)
            metrics.log_derived(
                "span_acc",
                lambda meters: round(
                    100.0 * float(meters["_span_correct"].sum)
                    / float(meters["_span_total"].sum), 3
                ),
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
