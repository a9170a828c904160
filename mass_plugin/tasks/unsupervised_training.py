"""The training update of task ``unsupervised_translation``: the batches it
builds from each MASS batch, and the weighted sum of their losses.

Both extra batches start from the batch's sentences as they were before
masking (``sample["raw"]``): the denoising batch restores each sentence from
a noised copy (:mod:`mass_plugin.data.denoising`), the back-translation batch
from the current model's translation of it into the other language, made
without gradient. Each loss has its weight, a schedule over updates
(``--lambda-mass``, ``--lambda-dae``, ``--lambda-bt``).
"""

import torch
from fairseq import search
from fairseq.data import data_utils
from fairseq.sequence_generator import SequenceGenerator
from fairseq.tasks.online_backtranslation import PiecewiseLinearFn

STEP_TYPES = ("mass", "dae", "bt")


def step_weights(cfg):
    """The weight schedule of each step type, from ``--lambda-{mass,dae,bt}``."""
    schedules = {}
    for name in STEP_TYPES:
        option = getattr(cfg, f"lambda_{name}")
        try:
            schedules[name] = PiecewiseLinearFn.from_string(option)
        except (AssertionError, ValueError) as error:
            raise ValueError(
                f"--lambda-{name}: expected a number or 'update:weight,update:weight,...' "
                f"with increasing updates, got {option!r}"
            ) from error
    return schedules


def unwrap_model(model):
    """The FairseqModel inside fairseq's distributed wrappers."""
    while hasattr(model, "module"):
        model = model.module
    return model


def _originals(raw):
    """The unpadded sentences of a batch's ``raw`` part."""
    return [row[:n] for row, n in zip(raw["src_tokens"], raw["src_lengths"].tolist())]


class TrainingStepsMixin:
    """``train_step`` of :class:`UnsupervisedTranslationTask` and the batches
    it builds; reads the task's ``cfg``, ``dictionary``, ``lambdas`` (weight
    schedules by step type), ``noise`` and ``_generators`` (a cache)."""

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
        """One update: weighted MASS, denoising and back-translation losses,
        each averaged over its tokens, summed, and one ``backward``."""
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
