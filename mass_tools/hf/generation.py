"""fairseq-generate's search in ``transformers``: the generation config of an
export, and the one rule a config cannot say.

fairseq's beam search maps onto ``generate``'s: ``num_beams`` = ``--beam``,
``length_penalty`` = ``--lenpen`` (scores divided by the number of tokens,
``</s>`` included, to that power), ``early_stopping=True`` (a sentence is
done once it has ``--beam`` finished hypotheses), ``min_new_tokens`` =
``--min-len``, ``<pad>`` never chosen, and ``max_length`` = ``--max-len-b``
plus the decoder's start token and ``</s>``. At the last step fairseq allows
only ``</s>`` and keeps its log-probability; ``transformers``'
``forced_eos_token_id`` gives it 0 instead, which lifts the hypotheses that
reach the limit and can change which one wins. The config therefore leaves
``forced_eos_token_id`` unset and :class:`EosAtMaxLength`, passed to
``generate``, applies fairseq's rule::

    model.generate(**batch, logits_processor=fairseq_processors(model))

``--max-len-a`` (a limit proportional to the source length) has no
equivalent in a generation config.
"""

import json
import math
from dataclasses import fields

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

# the fairseq-generate options an export carries into generation_config.json
DECODING_OPTIONS = ("beam", "lenpen", "max_len_a", "max_len_b", "min_len")


class EosAtMaxLength(LogitsProcessor):
    """At the last step ``max_length`` leaves, only ``</s>`` may follow, with
    its own log-probability, as in fairseq-generate (``transformers``'
    ``ForcedEOSTokenLogitsProcessor`` sets it to 0)."""

    def __init__(self, max_length: int, eos_token_id: int):
        self.max_length = int(max_length)
        self.eos_token_id = int(eos_token_id)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor):
        if input_ids.shape[-1] < self.max_length - 1:
            return scores
        kept = torch.full_like(scores, -math.inf)
        kept[:, self.eos_token_id] = scores[:, self.eos_token_id]
        return kept


def fairseq_processors(model, max_length=None) -> LogitsProcessorList:
    """The processors that, with the export's generation config, make
    ``model.generate`` choose fairseq-generate's tokens, for the config's
    ``max_length`` or the one given (pass ``generate`` the same)."""
    config = model.generation_config
    if config.forced_eos_token_id is not None:
        raise ValueError(
            "the generation config sets forced_eos_token_id, which runs before "
            "EosAtMaxLength and gives </s> a score of 0: set it to None")
    return LogitsProcessorList([EosAtMaxLength(max_length or config.max_length,
                                               config.eos_token_id)])


def fairseq_defaults() -> dict:
    """fairseq-generate's own defaults of :data:`DECODING_OPTIONS`."""
    from fairseq.dataclass.configs import GenerationConfig as FairseqGeneration

    defaults = {f.name: f.default for f in fields(FairseqGeneration)}
    return {name: defaults[name] for name in DECODING_OPTIONS}


def recorded_decoding(task_cfg) -> dict:
    """The decoding options the checkpoint records: those its validation
    decoded with (``--eval-bleu`` with ``--eval-bleu-args`` or
    ``--eval-bleu-beam``); empty without ``--eval-bleu``."""
    if not task_cfg.get("eval_bleu"):
        return {}
    recorded = {}
    if task_cfg.get("eval_bleu_beam") is not None:
        recorded["beam"] = task_cfg["eval_bleu_beam"]
    args = json.loads(task_cfg.get("eval_bleu_args") or "{}")
    recorded.update({k: v for k, v in args.items() if k in DECODING_OPTIONS})
    return recorded


def decoding_settings(given: dict, recorded: dict) -> tuple:
    """({option: value}, {option: where it came from}): the export's option
    where given, else the checkpoint's record, else fairseq-generate's default."""
    values, sources = {}, {}
    defaults = fairseq_defaults()
    for name in DECODING_OPTIONS:
        flag = "--" + name.replace("_", "-")
        if given.get(name) is not None:
            values[name], sources[name] = given[name], f"the export's {flag}"
        elif name in recorded:
            values[name], sources[name] = recorded[name], "the checkpoint's --eval-bleu-args"
        else:
            values[name], sources[name] = defaults[name], f"fairseq-generate's default {flag}"
    return values, sources


def max_new_tokens(settings, max_positions) -> int:
    """fairseq's limit with ``--max-len-a 0``: at most ``--max-len-b`` tokens
    (and fewer than the decoder's positions), then ``</s>``."""
    if settings["max_len_a"]:
        raise ValueError(
            f"--max-len-a {settings['max_len_a']}: a generation config has no limit that "
            "grows with the source; give --max-len-a 0 and a --max-len-b that bounds "
            "your outputs")
    limit = min(int(settings["max_len_b"]), max_positions - 1)
    if settings["min_len"] > limit:
        raise ValueError(f"--min-len {settings['min_len']} is above the length limit {limit}")
    return limit + 1


def generation_config(settings, dictionary, max_positions) -> GenerationConfig:
    """The generation config for fairseq-generate's search with ``settings``."""
    beam = int(settings["beam"])
    # transformers refuses to save beam-only options with one beam (greedy search)
    beam_only = dict(length_penalty=float(settings["lenpen"]), early_stopping=True)
    return GenerationConfig(
        num_beams=beam, **(beam_only if beam > 1 else {}),
        do_sample=False, num_return_sequences=1,
        # the decoder's start token, then at most max_new_tokens (</s> included)
        max_length=1 + max_new_tokens(settings, max_positions),
        min_new_tokens=int(settings["min_len"]),
        suppress_tokens=[dictionary.pad()],
        bos_token_id=dictionary.bos(), pad_token_id=dictionary.pad(),
        eos_token_id=dictionary.eos(), decoder_start_token_id=dictionary.eos(),
        forced_eos_token_id=None, forced_bos_token_id=None)
