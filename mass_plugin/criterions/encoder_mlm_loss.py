"""Criterion ``encoder_mlm_loss``: BERT's masked-LM loss on the encoder alone.

The encoder half of the paper's BERT+LM baseline (Song et al. 2019, Table 3):
with ``--task masked_s2s --mask-mode discrete --mask-ratio 0.15`` each
sentence has 15% of its tokens masked (80% ``<mask>``, 10% random, 10% kept),
and the encoder predicts them at their own positions through the output
projection shared with the embeddings (``share_all_embeddings``). The decoder
is not run: its parameters get no gradient.
"""

import math
from dataclasses import dataclass

import torch
from fairseq import utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics


@dataclass
class EncoderMLMLossConfig(FairseqDataclass):
    pass


@register_criterion("encoder_mlm_loss", dataclass=EncoderMLMLossConfig)
class EncoderMLMLoss(FairseqCriterion):
    def forward(self, model, sample, reduce=True):
        net_input = sample["net_input"]
        # B x k sentence positions, 1-based; padding (position 0) becomes
        # offset -1, clamped to 0: it gathers the first state, whose target is
        # padding and so ignored
        positions = net_input["positions"]
        extra = {k: net_input[k] for k in ("src_lang_id",) if k in net_input}
        encoder_out = model.encoder(net_input["src_tokens"],
                                    src_lengths=net_input["src_lengths"], **extra)
        states = encoder_out["encoder_out"][0].transpose(0, 1)  # B x T x C
        offsets = (positions - 1).clamp(min=0)
        picked = states.gather(1, offsets.unsqueeze(-1).expand(-1, -1, states.size(-1)))
        logits = model.decoder.output_layer(picked)
        lprobs = utils.log_softmax(logits, dim=-1)  # fp32, also under --fp16
        target = sample["target"]
        loss = torch.nn.functional.nll_loss(
            lprobs.view(-1, lprobs.size(-1)), target.view(-1),
            ignore_index=self.padding_idx, reduction="sum" if reduce else "none",
        )
        in_mask = target.ne(self.padding_idx)
        n_correct = lprobs.argmax(-1).eq(target).logical_and(in_mask).sum()
        sample_size = sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": target.size(0),
            "sample_size": sample_size,
            "mlm_correct": n_correct.detach(),  # a tensor: no wait for the GPU here
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return utils.item(sum(log.get(key, 0) for log in logging_outputs))

        sample_size = total("sample_size")
        if sample_size:
            metrics.log_scalar("loss", total("loss") / sample_size / math.log(2),
                               sample_size, round=3)
            metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["loss"].avg))
            metrics.log_scalar("mlm_acc", 100.0 * total("mlm_correct") / sample_size,
                               sample_size, round=3)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
