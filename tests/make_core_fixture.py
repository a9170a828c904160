"""Writes tests/data/core_equality.json: what the model code computes in
training and decoding, so that a rewrite of the model's forward pass can be
shown to compute the same (tests/test_core_equality.py).

For each configuration of CONFIGS: the loss and the gradient norm of each of
UPDATES updates of fairseq's Trainer on the CPU, from the weights of seed 1,
with the configuration's dropout (on by default: the random draws must be
the same too); the token ids beam search gives the valid sentences with the
fine-tuned model. Recorded with the code of the commit named in the file;
run again (python tests/make_core_fixture.py) only to replace it on purpose.
"""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch
from fairseq.data import Dictionary
from omegaconf import OmegaConf

from conftest import (  # noqa: E402
    PLUGIN_DIR,
    binarize,
    binarize_splits,
    synthetic_sentences,
    to_french,
)

FIXTURE = Path(__file__).resolve().parent / "data" / "core_equality.json"
UPDATES = 6

PRETRAIN = ("--task", "masked_s2s", "--criterion", "masked_s2s_loss")
PRETRAIN_LANGS = PRETRAIN + ("--langs", "en,fr")
FINETUNE = ("--task", "translation", "-s", "en", "-t", "fr", "--criterion",
            "label_smoothed_cross_entropy", "--label-smoothing", "0.1")
UNSUP = ("--task", "unsupervised_translation", "--langs", "en,fr", "--criterion",
         "masked_s2s_loss", "--lambda-dae", "1")
# name: (data, options): "mono" is one language-less split, "both" en and fr
# apart with en-fr pairs; "pretrained" fine-tunes from the default pre-training
CONFIGS = {
    "pretrain": ("mono", PRETRAIN),
    "pretrain_sdpa": ("mono", PRETRAIN + ("--attention", "sdpa")),
    "pretrain_compile_sdpa": ("mono", PRETRAIN + ("--compile-layers", "--attention", "sdpa")),
    "pretrain_hide_cross": ("mono", PRETRAIN + ("--hide-mask-states", "cross")),
    "pretrain_hide_encoder": ("mono", PRETRAIN + ("--hide-mask-states", "encoder")),
    "pretrain_hide_encoder_sdpa": ("mono", PRETRAIN + ("--hide-mask-states", "encoder",
                                                       "--attention", "sdpa")),
    "pretrain_fairseq_style": ("mono", PRETRAIN + ("--embedding-style", "fairseq")),
    "pretrain_torch_adam": ("mono", PRETRAIN + ("--optimizer", "torch_adam")),
    "pretrain_chunked_loss": ("mono", PRETRAIN + ("--loss-chunk-tokens", "7")),
    "pretrain_langs": ("both", PRETRAIN_LANGS),
    "pretrain_langs_sdpa": ("both", PRETRAIN_LANGS + ("--attention", "sdpa")),
    "finetune": ("pretrained", FINETUNE),
    "finetune_sdpa": ("pretrained", FINETUNE + ("--attention", "sdpa")),
    "finetune_langs": ("pretrained_langs", FINETUNE),
    "unsupervised": ("both", UNSUP),
    "unsupervised_sdpa": ("both", UNSUP + ("--attention", "sdpa")),
}


def corpus(root):
    """en and fr text (not parallel) and en-fr pairs, one dictionary; the
    same text as one language-less split in ``root/mono``."""
    (root / "mono").mkdir(parents=True, exist_ok=True)
    en = synthetic_sentences(1, 160, prefix="e", max_len=14)
    fr = [to_french(s) for s in synthetic_sentences(2, 160, prefix="e", max_len=14)]
    pairs = synthetic_sentences(3, 100, prefix="e", max_len=14)
    fr_pairs = [to_french(s) for s in pairs]
    binarize_splits(root, {
        "train.en": en, "train.fr": fr, "valid.en": en[:24], "valid.fr": fr[:24],
        "train.en-fr.en": pairs[:80], "train.en-fr.fr": fr_pairs[:80],
        "valid.en-fr.en": pairs[80:], "valid.en-fr.fr": fr_pairs[80:]})
    for name in ("mono/dict.txt", "dict.en.txt", "dict.fr.txt"):  # each task's name for it
        shutil.copy(root / "dict.txt", root / name)
    binarize(en + fr, Dictionary.load(str(root / "dict.txt")), str(root / "mono/train"))
    return root


def trainer_for(data, options, finetune_from=None):
    """fairseq's Trainer as fairseq-train builds it, for a tiny transformer_mass."""
    from fairseq import options as fairseq_options
    from fairseq import tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.trainer import Trainer

    argv = [str(data), "--user-dir", str(PLUGIN_DIR), "--arch", "transformer_mass_tiny",
            "--optimizer", "adam", "--lr", "0.002", "--max-tokens", "400", "--seed", "1",
            "--num-workers", "0", "--required-batch-size-multiple", "1", "--cpu",
            "--max-source-positions", "64", "--max-target-positions", "64", *options]
    if "--optimizer" in options:  # the configuration names its own
        argv[argv.index("--optimizer"):argv.index("--optimizer") + 2] = []
    if finetune_from:
        argv += ["--finetune-from-model", str(finetune_from)]
    cfg = convert_namespace_to_omegaconf(
        fairseq_options.parse_args_and_arch(fairseq_options.get_training_parser(), argv))
    utils.import_user_module(cfg.common)
    utils.set_torch_seed(1)
    task = tasks.setup_task(cfg.task)
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    trainer = Trainer(cfg, task, model, criterion)
    if finetune_from:  # what fairseq-train's checkpoint_utils.load_checkpoint does
        state = torch.load(finetune_from, weights_only=False)
        trainer.model.load_state_dict(state["model"], strict=True, model_cfg=cfg.model)
    return trainer, task, cfg


def train(trainer, updates):
    """The loss of each of ``updates`` updates over epoch 1's batches, as the
    task computed it (fairseq's log rounds it), and a digest of the weights
    after them."""
    losses = []
    task_step = trainer.task.train_step

    def train_step(*args, **kwargs):
        loss, sample_size, logging_output = task_step(*args, **kwargs)
        losses.append(loss.detach().item())
        return loss, sample_size, logging_output

    trainer.task.train_step = train_step
    batches = list(trainer.get_train_iterator(epoch=1).next_epoch_itr(shuffle=False))
    for i in range(updates):
        trainer.train_step([batches[i % len(batches)]])
    trainer.task.train_step = task_step
    return losses, weights_digest(trainer.model)


def weights_digest(model):
    """sha256 of every tensor's bytes, in name order, and the absolute sum of
    the floating-point ones."""
    digest, total = hashlib.sha256(), 0.0
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + tensor.detach().cpu().contiguous().numpy().tobytes())
        if tensor.is_floating_point():
            total += tensor.detach().double().abs().sum().item()
    return digest.hexdigest(), total


def hypotheses(trainer, task):
    """Beam search's token ids for the valid pairs' source sentences."""
    from fairseq.sequence_generator import SequenceGenerator

    task.load_dataset("valid")
    model = trainer.model.eval()
    generator = SequenceGenerator([model], task.target_dictionary, beam_size=3, max_len_b=12)
    batches = task.get_batch_iterator(task.dataset("valid"), max_sentences=8,
                                      required_batch_size_multiple=1).next_epoch_itr(False)
    found = {}
    with torch.no_grad():
        for batch in batches:
            for sid, hyps in zip(batch["id"].tolist(), generator.generate([model], batch)):
                found[sid] = hyps[0]["tokens"].tolist()
    return [found[i] for i in sorted(found)]


def record(root):
    data = corpus(root / "data")
    saved, results = {}, {}
    for name, (source, options) in CONFIGS.items():
        start = None
        if source.startswith("pretrained"):  # "pretrained_langs" -> "pretrain_langs"
            start = saved["pretrain" + source.removeprefix("pretrained")]
        trainer, task, cfg = trainer_for(data / "mono" if source == "mono" else data,
                                         options, start)
        losses, (digest, total) = train(trainer, UPDATES)
        results[name] = {"loss": losses, "weights_sha256": digest, "weights_abs_sum": total}
        if name in ("pretrain", "pretrain_langs"):
            path = root / f"{name}.pt"
            # the model and its configuration, as a checkpoint file holds them
            torch.save({"model": trainer.model.state_dict(),
                        "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)},
                       path)
            saved[name] = path
        if start is not None:
            results[name]["hypotheses"] = hypotheses(trainer, task)
        print(name, losses, flush=True)
    return results


def main():
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=FIXTURE.parent).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        results = record(Path(tmp))
    FIXTURE.write_text(json.dumps({
        "commit": commit, "torch": torch.__version__, "machine": platform.machine(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(), "updates": UPDATES, "results": results},
        indent=1) + "\n")
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    os.environ.setdefault("MASS_PLUGIN_COMPILE_BACKEND", "aot_eager")  # seconds, not minutes
    main()
