"""End to end through fairseq's own commands on seeded synthetic data:
preprocess -> masked_s2s pre-training -> translation fine-tuning -> decoding."""

import re
import subprocess
import sys

import pytest
import torch

from conftest import (
    PLUGIN_DIR,
    REPO,
    CreatesAFile,
    preprocess,
    run_cli,
    synthetic_sentences,
    to_french,
    valid_losses,
    write,
)

# end to end: every test here starts processes or trains to a result
pytestmark = pytest.mark.slow

VOCAB = 40


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """Raw text, binarized data, a pre-trained and a fine-tuned checkpoint."""
    root = tmp_path_factory.mktemp("cli")
    en = synthetic_sentences(10, 500, prefix="e", vocab=VOCAB)
    fr = [to_french(s, VOCAB) for s in synthetic_sentences(11, 500, prefix="e", vocab=VOCAB)]
    # empty and one-token lines must not stop pre-training (see README)
    short = ["", "e3", "", "f7 e1"]
    write(root / "mono.txt", en + short + fr)
    write(root / "mono.valid.txt",
          synthetic_sentences(12, 60, prefix="e", vocab=VOCAB) + short)
    pairs = synthetic_sentences(13, 2060, prefix="e", vocab=VOCAB)
    for split, lines in (("train", pairs[:2000]), ("valid", pairs[2000:2030]),
                         ("test", pairs[2030:])):
        write(root / f"{split}.en", lines)
        write(root / f"{split}.fr", [to_french(s, VOCAB) for s in lines])

    preprocess(root)

    common = ["--user-dir", "mass_plugin", "--arch", "transformer_mass_tiny", "--cpu",
              "--optimizer", "adam", "--lr", "0.003", "--max-tokens", "600",
              "--seed", "1", "--log-format", "simple", "--num-workers", "0"]
    pretrain = run_cli(
        ["fairseq-train", root / "bin", "--task", "masked_s2s",
         "--criterion", "masked_s2s_loss", "--mask-ratio", "0.5", "--max-epoch", "5",
         "--save-dir", root / "ckpt/pretrain"] + common, cwd=REPO)
    finetune = run_cli(
        ["fairseq-train", root / "pairs-bin", "--task", "translation",
         "--finetune-from-model", root / "ckpt/pretrain/checkpoint_best.pt",
         "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
         "--max-epoch", "4", "--save-dir", root / "ckpt/ft"] + common, cwd=REPO)
    return root, pretrain.stderr + pretrain.stdout, finetune.stderr + finetune.stdout


def test_pretraining_reduces_validation_loss_and_logs_span_accuracy(workdir):
    _, log, _ = workdir
    losses = valid_losses(log)
    assert len(losses) == 5
    assert losses[-1] < losses[0] - 0.5
    assert re.search(r"valid on 'valid' subset .*\| span_acc [\d.]+", log)


def test_fine_tuning_starts_from_the_pretrained_checkpoint(workdir):
    root, _, log = workdir
    assert f"loading pretrained model from {root / 'ckpt/pretrain/checkpoint_best.pt'}" in log
    pretrained = torch.load(root / "ckpt/pretrain/checkpoint_best.pt")["model"]
    fine_tuned = torch.load(root / "ckpt/ft/checkpoint_best.pt")["model"]
    assert pretrained.keys() == fine_tuned.keys()
    assert all(pretrained[k].shape == fine_tuned[k].shape for k in pretrained)
    assert valid_losses(log)[-1] < valid_losses(log)[0]


def generate_every_test_sentence(root, checkpoint):
    """fairseq-generate on the workdir's 30 test pairs with ``checkpoint``:
    its output, after checking that every sentence got a hypothesis."""
    out = run_cli(["fairseq-generate", root / "pairs-bin", "--user-dir", "mass_plugin",
                   "--path", checkpoint, "--beam", "5", "--batch-size", "16",
                   "--required-batch-size-multiple", "1", "--cpu"], cwd=REPO)
    hypotheses = re.findall(r"^H-(\d+)\t", out.stdout, flags=re.M)
    assert sorted(map(int, hypotheses)) == list(range(30))
    return out


def test_generate_translates_every_test_sentence_without_an_env_workaround(workdir):
    root, _, _ = workdir
    out = generate_every_test_sentence(root, root / "ckpt/ft/checkpoint_best.pt")
    bleu = float(re.search(r"BLEU4 = ([\d.]+)", out.stdout).group(1))
    assert bleu > 10.0  # the word map is learnt (about 20 here); a broken model scores ~0


def repeated_bigrams(tokens):
    bigrams = list(zip(tokens, tokens[1:]))
    return len(bigrams) - len(set(bigrams))


def test_no_repeat_ngram_size_blocks_repeats_on_cpu(workdir):
    """fairseq 0.12 alone ignores the option on CPU; the plugin fixes it."""
    root, _, _ = workdir
    hypotheses = {}
    for flags in ([], ["--no-repeat-ngram-size", "2"]):
        out = run_cli(["fairseq-generate", root / "pairs-bin", "--user-dir", "mass_plugin",
                       "--path", root / "ckpt/ft/checkpoint_best.pt", "--beam", "5",
                       "--batch-size", "16", "--required-batch-size-multiple", "1", "--cpu",
                       *flags], cwd=REPO)
        hypotheses[bool(flags)] = [line.split("\t")[2] if line.count("\t") == 2 else ""
                                   for line in out.stdout.splitlines() if line.startswith("H-")]
    assert len(hypotheses[True]) == len(hypotheses[False]) == 30
    # the synthetic sentences repeat words, and so does the model without the option
    assert sum(repeated_bigrams(h.split()) for h in hypotheses[False]) > 0
    assert all(repeated_bigrams(h.split()) == 0 for h in hypotheses[True])


def test_interactive_translates_stdin_from_another_directory(workdir, tmp_path):
    root, _, _ = workdir
    user_dir = subprocess.run([sys.executable, "-m", "mass_plugin"], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.strip()
    assert user_dir == str(PLUGIN_DIR)
    out = run_cli(["fairseq-interactive", root / "pairs-bin", "--user-dir", user_dir,
                   "--path", root / "ckpt/ft/checkpoint_best.pt", "-s", "en", "-t", "fr",
                   "--beam", "2", "--cpu"], cwd=tmp_path, stdin="e1 e8 e19\ne5 e38\n")
    assert len(re.findall(r"^H-\d+\t", out.stdout, flags=re.M)) == 2


def test_generate_refuses_a_checkpoint_that_would_run_code(workdir, tmp_path):
    root, _, _ = workdir
    marker = tmp_path / "payload-ran"
    state = torch.load(root / "ckpt/ft/checkpoint_best.pt")
    state["extra_state"]["payload"] = CreatesAFile(marker)
    torch.save(state, tmp_path / "evil.pt")
    out = run_cli(["fairseq-generate", root / "pairs-bin", "--user-dir", "mass_plugin",
                   "--path", tmp_path / "evil.pt", "--cpu"], cwd=REPO, check=False)
    assert out.returncode != 0
    assert "refusing to load checkpoint" in out.stderr
    assert not marker.exists()


def test_a_spawned_process_imports_the_plugin_from_anywhere(tmp_path):
    """fairseq's multi-GPU launch spawns workers that unpickle the config;
    the installed package imports in them whatever their directory."""
    script = (
        "import multiprocessing as mp\n"
        "def child(q):\n"
        "    from fairseq.tasks import TASK_REGISTRY\n"
        "    import mass_plugin\n"
        "    q.put(TASK_REGISTRY['masked_s2s'].__module__)\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('spawn')\n"
        "    q = ctx.Queue()\n"
        "    p = ctx.Process(target=child, args=(q,))\n"
        "    p.start(); print(q.get(timeout=120)); p.join()\n"
    )
    (tmp_path / "spawn_check.py").write_text(script)
    out = subprocess.run([sys.executable, "spawn_check.py"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "mass_plugin.tasks.masked_s2s"


def test_fine_tuning_with_another_dictionary_says_to_use_the_pretraining_one(workdir):
    root, _, _ = workdir
    run_cli(["fairseq-preprocess", "-s", "en", "-t", "fr", "--trainpref", root / "valid",
             "--validpref", root / "valid", "--joined-dictionary",
             "--destdir", root / "own-dict-bin", "--workers", "1"], cwd=REPO)
    out = run_cli(["fairseq-train", root / "own-dict-bin", "--user-dir", "mass_plugin",
                   "--task", "translation", "--arch", "transformer_mass_tiny", "--cpu",
                   "--finetune-from-model", root / "ckpt/pretrain/checkpoint_best.pt",
                   "--optimizer", "adam", "--lr", "0.001", "--max-tokens", "600",
                   "--max-update", "1", "--save-dir", root / "ckpt/own-dict"],
                  cwd=REPO, check=False)
    assert out.returncode != 0
    assert "fine-tune with the pre-training dictionary" in out.stderr


def test_bf16_through_fairseq_train_says_to_use_fairseq_hydra_train(workdir):
    """fairseq-train turns --bf16 into a TPU run; without torch_xla it would
    stop with a ModuleNotFoundError. The model says why and what to use."""
    root, _, _ = workdir
    out = run_cli(["fairseq-train", root / "bin", "--user-dir", "mass_plugin",
                   "--task", "masked_s2s", "--arch", "transformer_mass_tiny", "--bf16",
                   "--criterion", "masked_s2s_loss", "--optimizer", "adam", "--lr", "0.001",
                   "--max-tokens", "600", "--max-update", "1",
                   "--save-dir", root / "ckpt/bf16"], cwd=REPO, check=False)
    assert out.returncode != 0
    assert "--bf16: fairseq-train (fairseq 0.12) also sets --tpu" in out.stderr
    assert "common.bf16=true" in out.stderr
    assert "ModuleNotFoundError" not in out.stderr


def test_the_fast_paths_pretrain_fine_tune_and_decode_through_fairseqs_commands(workdir):
    """--attention sdpa and --optimizer torch_adam through fairseq-train,
    pre-training then fine-tuning; the checkpoint keeps them, and
    fairseq-generate decodes every test sentence with it. (--compile-layers
    has its own tests: compiling takes minutes on a CPU.)"""
    root, _, _ = workdir
    fast = ["--attention", "sdpa", "--optimizer", "torch_adam", "--user-dir", "mass_plugin",
            "--arch", "transformer_mass_tiny", "--cpu", "--lr", "0.003", "--max-tokens", "600",
            "--seed", "1", "--max-update", "12", "--log-format", "simple", "--num-workers", "0"]
    run_cli(["fairseq-train", root / "bin", "--task", "masked_s2s",
             "--criterion", "masked_s2s_loss", "--save-dir", root / "ckpt/fast-pretrain",
             *fast], cwd=REPO)
    run_cli(["fairseq-train", root / "pairs-bin", "--task", "translation",
             "--finetune-from-model", root / "ckpt/fast-pretrain/checkpoint_last.pt",
             "--criterion", "cross_entropy", "--save-dir", root / "ckpt/fast-ft", *fast],
            cwd=REPO)
    state = torch.load(root / "ckpt/fast-ft/checkpoint_last.pt")
    assert state["cfg"]["model"].attention == "sdpa"
    assert state["cfg"]["optimizer"]["_name"] == "torch_adam"
    generate_every_test_sentence(root, root / "ckpt/fast-ft/checkpoint_last.pt")
