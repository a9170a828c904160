"""The paths that only a GPU takes, through fairseq's own Trainer and data
loader: fp16 and bf16 training steps, their loss curves against fp32,
loading a checkpoint (fine-tuning's --finetune-from-model path) into a model
already on the device, online back-translation on batches the loader has
pinned, and an fp16 run resumed with its loss scale.

Each test runs on the CPU (fp32) everywhere and on CUDA where there is one:
the ``cuda`` cases are marked ``gpu`` and skipped without CUDA, so
``pytest -m gpu`` on a GPU machine runs just them
(benchmarks/gpu_check.sh does)."""

import subprocess
import sys

import pytest
import torch
from fairseq import checkpoint_utils

from conftest import (
    BIN_DIR,
    NO_DROPOUT,
    PLUGIN_DIR,
    PRECISION_FLAGS,
    REPO,
    assert_training_curves_match,
    binarize_bilingual,
    build_trainer,
    cli_env,
    train_batches,
    trainer_weights,
    training_curve,
)

# the largest per-update gap between a half-precision run's training loss and
# fp32's on the same batches from the same weights (bf16 on the CPU: 0.003 over 12 updates)
HALF_LOSS_GAP = 0.05
# and between their logged gradient norms, relative (bf16 on the CPU: 0.003; a
# loss scale left in or taken out twice: 1 or more)
HALF_GNORM_GAP = 0.05
GPU = [pytest.mark.gpu,
       pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
CPU_FP32 = ("cpu", "fp32")
CUDA_FP16 = pytest.param("cuda", "fp16", marks=GPU)
CUDA_BF16 = pytest.param("cuda", "bf16", marks=GPU)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return binarize_bilingual(tmp_path_factory.mktemp("gpu") / "bin")


@pytest.mark.parametrize("device,precision", [CPU_FP32, CUDA_FP16, CUDA_BF16])
def test_training_steps_update_the_weights_in_each_precision(data, device, precision):
    trainer = build_trainer(data, device, precision, "--task", "masked_s2s")
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
    first = next(trainer.model.parameters())
    assert (first.device.type, first.dtype) == (device, dtype)
    before = trainer_weights(trainer)
    logs = [trainer.train_step([batch]) for batch in train_batches(trainer, 4)]
    finished = [log for log in logs if log is not None]  # fp16 may skip an overflow
    assert len(finished) >= 2 and trainer.get_num_updates() >= 2
    assert all(torch.isfinite(torch.tensor(log["loss"])) for log in finished)
    after = trainer_weights(trainer)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(torch.isfinite(v).all() for v in after.values())


@pytest.mark.parametrize("device,precision", [("cpu", "bf16"), CUDA_FP16, CUDA_BF16])
def test_half_precision_training_follows_fp32(data, device, precision):
    """33 updates on CUDA (12 on the CPU, where bf16 is slow) in fp16 or
    bf16 track fp32's loss curve on the same device, update by update, within
    HALF_LOSS_GAP (fairseq logs losses to 3 decimals), with every dropout off:
    on CUDA fp16 and fp32 would draw different dropout masks (the shared
    helper, conftest.training_curve, checks every dropout module is at 0;
    each update's gaps are printed). The logged gradient norms too, within
    HALF_GNORM_GAP, relative."""
    updates = 33 if device == "cuda" else 12
    half = training_curve(data, device, precision, updates, "--fp16-init-scale", "16")
    full = training_curve(data, device, "fp32", updates)
    assert_training_curves_match(half, full, HALF_LOSS_GAP, HALF_GNORM_GAP)
    assert full["loss"][-1] < full["loss"][0] - 0.5  # the curves went somewhere


@pytest.mark.parametrize("device,precision", [CPU_FP32, CUDA_FP16])
def test_a_checkpoint_loads_into_a_model_already_on_the_device(data, tmp_path, device,
                                                               precision):
    """fairseq loads a checkpoint on the CPU into the Trainer's model, which
    is on the GPU: the path of --finetune-from-model and --restore-file."""
    pretrained = build_trainer(data, device, precision, "--task", "masked_s2s")
    pretrained.train_step(train_batches(pretrained, 1))
    pretrained.consolidate_optimizer()  # as fairseq's checkpoint_utils does first
    pretrained.save_checkpoint(str(tmp_path / "checkpoint.pt"), {})
    saved = checkpoint_utils.load_checkpoint_to_cpu(str(tmp_path / "checkpoint.pt"))["model"]
    fresh = build_trainer(data, device, precision, "--task", "masked_s2s", seed=2)
    fresh.load_checkpoint(str(tmp_path / "checkpoint.pt"), reset_optimizer=True,
                          reset_lr_scheduler=True, reset_meters=True)
    loaded = fresh.model.state_dict()
    assert next(fresh.model.parameters()).device.type == device
    assert all(torch.equal(loaded[k].cpu(), saved[k]) for k in saved)


@pytest.mark.parametrize("device,precision", [CPU_FP32, CUDA_FP16])
def test_online_backtranslation_steps_and_bleu_validation_on_loader_batches(data, device,
                                                                            precision):
    """One update of MASS + online back-translation, then BLEU validation of
    both directions, every batch from fairseq's loader (pinned on CUDA)."""
    trainer = build_trainer(data, device, precision, "--task", "unsupervised_translation",
                            "--lambda-bt", "1", "--eval-bleu", "--max-tokens-valid", "300")
    log = trainer.train_step(train_batches(trainer, 1))
    assert log is not None or precision == "fp16"  # an fp16 overflow skips the update
    if log is not None:
        assert torch.isfinite(torch.tensor(log["bt_loss"])) and log["bt_loss"] > 0
    trainer.task.load_dataset("valid")
    valid = trainer.get_valid_iterator("valid").next_epoch_itr(shuffle=False)
    batch = next(valid)
    assert set(batch) == {"en-fr", "fr-en"}
    out = trainer.valid_step(batch)  # translates both directions, scores BLEU
    # each direction's BLEU is sacreBLEU's of the same greedy translations of
    # the batch, made here by fairseq's own generator; "bleu" is their mean
    expected = {direction: greedy_bleu(trainer, part, device)
                for direction, part in batch.items()}
    assert out["bleu_en_fr"] == expected["en-fr"] and out["bleu_fr_en"] == expected["fr-en"]
    assert out["bleu"] == round((expected["en-fr"] + expected["fr-en"]) / 2, 2)


def greedy_bleu(trainer, batch, device):
    """sacreBLEU (2 decimals) of ``trainer``'s model's greedy translations of
    ``batch`` (fairseq's SequenceGenerator, the task's length limits)
    against its targets."""
    import sacrebleu
    from fairseq import utils
    from fairseq.sequence_generator import SequenceGenerator

    task, model = trainer.task, trainer.model.eval()
    generator = SequenceGenerator([model], task.dictionary, beam_size=1,
                                  max_len_a=task.cfg.bt_max_len_a,
                                  max_len_b=task.cfg.bt_max_len_b)
    batch = utils.move_to_cuda(batch) if device == "cuda" else batch
    with torch.no_grad():
        hypos = generator.generate([model], batch)
    hyps = [task.dictionary.string(h[0]["tokens"].int().cpu(), unk_string="UNK-HYP")
            for h in hypos]
    refs = [task.dictionary.string(utils.strip_pad(t, task.dictionary.pad()).int().cpu(),
                                   unk_string="UNK-REF") for t in batch["target"]]
    return round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)


@pytest.mark.slow
@pytest.mark.parametrize("setting,enabled", [(None, "False"), ("1", "True")])
def test_importing_the_plugin_turns_cudnn_attention_off_unless_kept(setting, enabled):
    """cuDNN's attention compiles a kernel for every new batch shape (see
    mass_plugin/cuda_attention.py); MASS_PLUGIN_CUDNN_ATTENTION=1 keeps it."""
    env = cli_env()
    env.pop("MASS_PLUGIN_CUDNN_ATTENTION", None)
    if setting:
        env["MASS_PLUGIN_CUDNN_ATTENTION"] = setting
    code = ("import torch; before = torch.backends.cuda.cudnn_sdp_enabled(); "
            "import mass_plugin; print(before, torch.backends.cuda.cudnn_sdp_enabled())")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", enabled]


def fp16_cli_run(data, save_dir, updates, device):
    """fairseq-train --fp16 of masked_s2s to ``updates`` (resuming from
    save_dir's last checkpoint if there is one), its loss scale doubling
    every 4 updates from 128: the checkpoint it ends with."""
    subprocess.run(
        [str(BIN_DIR / "fairseq-train"), str(data), "--user-dir", str(PLUGIN_DIR),
         "--task", "masked_s2s", "--langs", "en,fr", "--arch", "transformer_mass_tiny",
         "--criterion", "masked_s2s_loss", "--optimizer", "adam", "--lr", "0.001",
         "--adam-eps", "1e-4", "--max-tokens", "300", "--seed", "1", "--num-workers", "0",
         *NO_DROPOUT, *PRECISION_FLAGS[device, "fp16"], "--fp16-init-scale", "128",
         "--fp16-scale-window", "4", "--disable-validation", "--max-update", str(updates),
         "--save-dir", str(save_dir)],
        cwd=REPO, env=cli_env(), check=True, capture_output=True)
    return checkpoint_utils.load_checkpoint_to_cpu(str(save_dir / "checkpoint_last.pt"))


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_an_fp16_run_resumes_exactly_with_its_loss_scale(data, tmp_path):
    """fairseq-train --fp16 stopped at update 8 and run again to 12 ends as a
    run of 12: the same loss scale (saved with the optimizer's state) and the
    same weights. fairseq saves the scale but not the scaler's window
    counters, which start again at 0: stopping at a multiple of the window (4)
    keeps the scale's schedule. fairseq saves the fp16 weights, not the fp32
    copy FP16Optimizer updates, hence a tolerance of about an fp16 step; Adam's
    eps of 1e-4 keeps rounding noise in a gradient that is 0 in exact
    arithmetic (the attention's key bias) from growing into steps of lr.
    (tests/test_fp16_cpu.py resumes fp16 runs on the CPU.)"""
    straight = fp16_cli_run(data, tmp_path / "straight", 12, "cuda")
    fp16_cli_run(data, tmp_path / "resumed", 8, "cuda")
    resumed = fp16_cli_run(data, tmp_path / "resumed", 12, "cuda")
    scale = [s["last_optimizer_state"]["loss_scale"] for s in (straight, resumed)]
    assert scale[0] == scale[1] and scale[0] != 128  # the window of 4 moved it
    for name, weight in straight["model"].items():
        assert torch.allclose(weight.float(), resumed["model"][name].float(), rtol=2**-9,
                              atol=1e-4), name
