"""The fairseq-hydra-train presets in mass_plugin/config: each one trains two
updates of a tiny model on CPU, run from a directory other than the
repository, and every setting of the preset reaches the saved configuration.
Cross-lingual pre-training (pretrain_base) feeds fine-tuning and
unsupervised translation, as in the README."""

import pytest
from fairseq import checkpoint_utils
from omegaconf import OmegaConf
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from conftest import (
    PLUGIN_DIR,
    binarize,
    build_dictionary,
    largest_weight_change,
    run_cli,
    synthetic_sentences,
    to_french,
)

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

PRESETS = PLUGIN_DIR / "config"


def tiny(*extra):
    """Overrides that turn a GPU preset into a two-update CPU run."""
    return [f"common.user_dir={PLUGIN_DIR}", "common.cpu=true", "common.fp16=false",
            "common.log_interval=1", "model._name=transformer_mass_tiny",
            "optimization.max_update=2", "optimization.update_freq=[1]",
            "dataset.max_tokens=500", "dataset.num_workers=0", *extra]


def hydra_train(preset, cwd, overrides):
    """fairseq-hydra-train with a preset; returns its output (fairseq's log)."""
    proc = run_cli(["fairseq-hydra-train", "--config-dir", PRESETS, "--config-name", preset,
                    *overrides], cwd=cwd)
    return proc.stdout + proc.stderr


def overridden(overrides):
    return {o.lstrip("+").split("=", 1)[0] for o in overrides}


def assert_trained_with_preset(preset, save_dir, overrides, log):
    """Two updates, a checkpoint, hydra's files next to it, and every value of
    the preset (unless overridden) in the checkpoint's configuration."""
    assert "num_updates 2" in log, log[-3000:]
    state = checkpoint_utils.load_checkpoint_to_cpu(str(save_dir / "checkpoint_last.pt"))
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert (save_dir / ".hydra" / "config.yaml").is_file()
    saved = OmegaConf.create(state["cfg"])
    preset_cfg = OmegaConf.load(PRESETS / f"{preset}.yaml")
    skip = overridden(overrides)
    checked = 0
    for section in preset_cfg:
        if section == "hydra":
            continue
        for key in preset_cfg[section]:
            name = f"{section}.{key}"
            if name in skip or OmegaConf.is_missing(preset_cfg[section], key) \
                    or OmegaConf.is_interpolation(preset_cfg[section], key):
                continue
            expected = preset_cfg[section][key]
            if OmegaConf.is_config(expected):  # a list: optimization.lr
                expected = OmegaConf.to_container(expected)
            assert OmegaConf.select(saved, name) == expected, (name, expected)
            checked += 1
    assert checked >= 15
    return state


def scalar_tags(logdir):
    """The scalar names fairseq wrote to tensorboard, per writer (train_inner,
    train, valid...), and their steps."""
    tags = {}
    for run in sorted(p for p in logdir.iterdir() if p.is_dir()):
        events = EventAccumulator(str(run))
        events.Reload()
        tags[run.name] = {tag: [e.step for e in events.Scalars(tag)]
                          for tag in events.Tags()["scalars"]}
    return tags


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """One dictionary; monolingual train/valid.{en,fr} (masked_s2s --langs,
    unsupervised_translation) and en-fr pairs (translation, BLEU validation),
    in the layout of mass-binarize."""
    root = tmp_path_factory.mktemp("presets")
    mono = {"en": synthetic_sentences(1, 200, prefix="e")}
    mono["fr"] = [to_french(s) for s in synthetic_sentences(2, 200, prefix="e")]
    pairs_en = synthetic_sentences(3, 60, prefix="e")
    pairs = {"en": pairs_en, "fr": [to_french(s) for s in pairs_en]}
    dictionary = build_dictionary(mono["en"] + mono["fr"] + pairs["en"] + pairs["fr"])
    for name in ("dict.txt", "dict.en.txt", "dict.fr.txt"):
        dictionary.save(str(root / name))
    for lang in ("en", "fr"):
        binarize(mono[lang][:180], dictionary, str(root / f"train.{lang}"))
        binarize(mono[lang][180:], dictionary, str(root / f"valid.{lang}"))
        binarize(pairs[lang][:40], dictionary, str(root / f"train.en-fr.{lang}"))
        binarize(pairs[lang][40:], dictionary, str(root / f"valid.en-fr.{lang}"))
    return root


@pytest.fixture(scope="module")
def pretrained(data, tmp_path_factory):
    """pretrain_base, cross-lingual (en, fr), logging to tensorboard, run in
    the directory WORK: it saves to WORK/checkpoints/pretrain_base, where the
    other presets look for it by default."""
    work = tmp_path_factory.mktemp("work")
    overrides = tiny(f"task.data={data}", "task.langs='en,fr'",
                     f"common.tensorboard_logdir={work / 'tb'}")
    log = hydra_train("pretrain_base", work, overrides)
    return work, overrides, log


def test_pretrain_base_preset_trains_and_logs_span_accuracy_to_tensorboard(pretrained):
    work, overrides, log = pretrained
    save_dir = work / "checkpoints" / "pretrain_base"
    state = assert_trained_with_preset("pretrain_base", save_dir, overrides, log)
    assert state["cfg"]["task"]["_name"] == "masked_s2s"
    assert state["cfg"]["model"]["language_embeddings"] == "en,fr"
    assert not (work / "outputs").exists()  # hydra's files went to the save_dir
    tags = scalar_tags(work / "tb")
    assert tags["train_inner"]["span_acc"] == [1, 2]
    assert "span_acc" in tags["train"] and "span_acc" in tags["valid"]


def test_pretrain_big_preset_trains_on_monolingual_data(mono_data, tmp_path):
    data_dir, _, _ = mono_data
    work = tmp_path / "run"
    work.mkdir()
    overrides = tiny(f"checkpoint.save_dir={work / 'ckpt'}", f"task.data={data_dir}")
    log = hydra_train("pretrain_big", work, overrides)
    state = assert_trained_with_preset("pretrain_big", work / "ckpt", overrides, log)
    assert state["cfg"]["model"]["language_embeddings"] == "none"
    assert state["cfg"]["optimization"]["lr"] == [0.0001]


def test_finetune_preset_starts_from_the_pretrained_checkpoint(pretrained, data, tmp_path):
    work = pretrained[0]
    # the preset's checkpoint.finetune_from_model: pretrain_base's, run from work
    overrides = tiny(f"checkpoint.save_dir={tmp_path / 'ckpt'}", f"task.data={data}",
                     "task.source_lang=en", "task.target_lang=fr")
    log = hydra_train("finetune_nmt", work, overrides)
    state = assert_trained_with_preset("finetune_nmt", tmp_path / "ckpt", overrides, log)
    pretrained_ckpt = "checkpoints/pretrain_base/checkpoint_best.pt"
    assert f"Loaded checkpoint {pretrained_ckpt}" in log
    # the language embeddings of the cross-lingual checkpoint came along
    assert state["cfg"]["model"]["finetune_from_model"] == pretrained_ckpt
    assert state["cfg"]["model"]["language_embeddings"] == "en,fr"
    # two updates at a warm-up learning rate of about 1e-7: the pre-trained weights
    before = checkpoint_utils.load_checkpoint_to_cpu(str(work / pretrained_ckpt))
    assert largest_weight_change(before, state) < 1e-4


def test_unsup_nmt_preset_trains_with_back_translation(pretrained, data, tmp_path):
    overrides = tiny(f"checkpoint.save_dir={tmp_path / 'ckpt'}", f"task.data={data}",
                     "task.langs='en,fr'", f"common.tensorboard_logdir={tmp_path / 'tb'}")
    log = hydra_train("unsup_nmt", pretrained[0], overrides)
    assert_trained_with_preset("unsup_nmt", tmp_path / "ckpt", overrides, log)
    assert "Loaded checkpoint checkpoints/pretrain_base/checkpoint_best.pt" in log
    tags = scalar_tags(tmp_path / "tb")
    for name in ("bt_loss", "mass_loss", "span_acc"):
        assert tags["train_inner"][name] == [1, 2], name
    for name in ("bleu", "bleu_en_fr", "bleu_fr_en"):  # both directions of the valid pairs
        assert tags["valid"][name] == [2], name


def test_fairseq_train_tensorboard_logdir_gets_the_mass_and_back_translation_metrics(
        data, tmp_path):
    """Plain fairseq-train --tensorboard-logdir: the tensorboard extra is all it needs."""
    run_cli(["fairseq-train", data, "--user-dir", PLUGIN_DIR,
             "--task", "unsupervised_translation", "--langs", "en,fr",
             "--arch", "transformer_mass_tiny", "--criterion", "masked_s2s_loss", "--cpu",
             "--optimizer", "adam", "--lr", "0.001", "--max-tokens", "500",
             "--max-update", "3", "--lambda-bt", "1", "--num-workers", "0",
             "--valid-subset", "valid.fr", "--no-save", "--log-interval", "1",
             "--tensorboard-logdir", tmp_path / "tb"], cwd=tmp_path)
    tags = scalar_tags(tmp_path / "tb")
    for name in ("loss", "span_acc", "mass_loss", "bt_loss"):
        assert tags["train_inner"][name] == [1, 2, 3], name
        assert tags["train"][name] == [3], name
    assert tags["valid.fr"]["span_acc"] == [3]
