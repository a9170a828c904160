"""What projects/paper_analysis/__main__.py measures besides BLEU: the masked-span
perplexity of a pre-trained checkpoint on held-out monolingual text, and the
validation perplexity a fine-tuning logged."""

import math
import re

from projects.quiet_logs import quiet_logs


def masked_span_ppl(checkpoint, data, langs, max_tokens, seed, overrides=None):
    """2 ** (mean over ``langs`` of the masked-span loss in bits) on the
    ``valid.LANG`` sets of ``data``; ``overrides`` change the masking."""
    from fairseq import checkpoint_utils

    import mass_plugin  # noqa: F401  (registers the task; safe checkpoint loading)

    quiet_logs()
    overrides = dict(overrides or {}, data=str(data))
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides=overrides)
    quiet_logs()
    model = models[0].eval()
    criterion = task.build_criterion(cfg.criterion)
    bits = [bits_per_token(task, model, criterion, f"valid.{lang}", max_tokens, seed)
            for lang in langs]
    return round(2 ** (sum(bits) / len(bits)), 3)


def bits_per_token(task, model, criterion, subset, max_tokens, seed):
    """The criterion's mean loss over ``subset``, in bits per predicted token."""
    import torch

    task.load_dataset(subset, combine=False)
    batches = task.get_batch_iterator(
        task.dataset(subset), max_tokens=max_tokens, max_positions=task.max_positions(),
        ignore_invalid_inputs=True, seed=seed).next_epoch_itr(shuffle=False)
    nll, count = 0.0, 0
    with torch.no_grad():
        for sample in batches:
            _, sample_size, log = task.valid_step(sample, model, criterion)
            nll += float(log["nll_loss"])
            count += int(sample_size)
    return nll / count / math.log(2)


def finetune_valid_ppl(log):
    """The perplexity of the last validation in a fairseq-train log file."""
    valid = re.findall(r"valid on 'valid' subset \| loss [\d.]+ \| nll_loss ([\d.]+)",
                       log.read_text(errors="replace"))
    if not valid:
        raise RuntimeError(f"no validation result in {log}")
    return round(2 ** float(valid[-1]), 3)
