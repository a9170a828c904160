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
from fairseq import checkpoint_utils, options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.trainer import Trainer

from conftest import BIN_DIR, PLUGIN_DIR, REPO, binarize_bilingual, cli_env

# the largest per-update gap between a half-precision run's training loss and
# fp32's on the same batches from the same weights (bf16 on the CPU: 0.004)
HALF_LOSS_GAP = 0.05
GPU = [pytest.mark.gpu,
       pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
CPU_FP32 = ("cpu", "fp32")
CUDA_FP16 = pytest.param("cuda", "fp16", marks=GPU)
CUDA_BF16 = pytest.param("cuda", "bf16", marks=GPU)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return binarize_bilingual(tmp_path_factory.mktemp("gpu") / "bin")


def build_trainer(data, device, precision, *extra, seed=1):
    """A fairseq Trainer for a tiny transformer_mass, as fairseq-train builds it.
    bf16 is set on the configuration as fairseq-hydra-train's common.bf16=true
    does (fairseq-train's --bf16 means a TPU)."""
    argv = [str(data), "--user-dir", str(PLUGIN_DIR), "--langs", "en,fr",
            "--arch", "transformer_mass_tiny", "--criterion", "masked_s2s_loss",
            "--optimizer", "adam", "--lr", "0.001", "--max-tokens", "300",
            "--seed", str(seed), "--num-workers", "0", "--required-batch-size-multiple", "1",
            *extra]
    if device == "cpu":
        argv.append("--cpu")
    elif precision == "fp16":
        argv.append("--fp16")
    cfg = convert_namespace_to_omegaconf(
        options.parse_args_and_arch(options.get_training_parser(), argv))
    cfg.common.bf16 = precision == "bf16"
    utils.import_user_module(cfg.common)
    task = tasks.setup_task(cfg.task)
    model, criterion = task.build_model(cfg.model), task.build_criterion(cfg.criterion)
    return Trainer(cfg, task, model, criterion)


def train_batches(trainer, n):
    """The first ``n`` training batches, from fairseq's own loader (which pins
    them when CUDA is available)."""
    iterator = trainer.get_train_iterator(epoch=1).next_epoch_itr(shuffle=False)
    return [next(iterator) for _ in range(n)]


def weights(trainer):
    return {k: v.detach().float().cpu().clone() for k, v in trainer.model.state_dict().items()}


@pytest.mark.parametrize("device,precision", [CPU_FP32, CUDA_FP16, CUDA_BF16])
def test_training_steps_update_the_weights_in_each_precision(data, device, precision):
    trainer = build_trainer(data, device, precision, "--task", "masked_s2s")
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
    first = next(trainer.model.parameters())
    assert (first.device.type, first.dtype) == (device, dtype)
    before = weights(trainer)
    logs = [trainer.train_step([batch]) for batch in train_batches(trainer, 4)]
    finished = [log for log in logs if log is not None]  # fp16 may skip an overflow
    assert len(finished) >= 2 and trainer.get_num_updates() >= 2
    assert all(torch.isfinite(torch.tensor(log["loss"])) for log in finished)
    after = weights(trainer)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(torch.isfinite(v).all() for v in after.values())


def losses(device, precision, data, epochs=3):
    """Training losses of ``epochs`` passes over the same batches, from the
    same initial weights (seed 1), no dropout."""
    torch.manual_seed(1)
    trainer = build_trainer(data, device, precision, "--task", "masked_s2s", "--dropout", "0",
                            "--fp16-init-scale", "16")
    batches = list(trainer.get_train_iterator(epoch=1).next_epoch_itr(shuffle=False))
    logs = [trainer.train_step([batch]) for _ in range(epochs) for batch in batches]
    return [log["loss"] if log else None for log in logs]  # None: an fp16 overflow skipped


@pytest.mark.parametrize("device,precision", [("cpu", "bf16"), CUDA_FP16, CUDA_BF16])
def test_half_precision_training_follows_fp32(data, device, precision):
    """A few dozen updates in fp16 or bf16 track fp32's loss curve, update by
    update, within HALF_LOSS_GAP (fairseq logs losses to 3 decimals)."""
    half, full = losses(device, precision, data), losses(device, "fp32", data)
    assert len(half) >= 30 and all(loss is not None for loss in half), half
    gaps = [abs(a - b) for a, b in zip(half, full)]
    assert max(gaps) <= HALF_LOSS_GAP, gaps
    assert full[-1] < full[0] - 0.5  # the curves went somewhere


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
    assert all(0 <= out[key] <= 100 for key in ("bleu_en_fr", "bleu_fr_en", "bleu"))


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


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_an_fp16_run_resumes_exactly_with_its_loss_scale(data, tmp_path):
    """fairseq-train --fp16 stopped at update 6 and run again to 12 ends as a
    run of 12: the same loss scale (saved with the optimizer's state) and the
    same weights."""
    def train(save_dir, updates):
        subprocess.run(
            [str(BIN_DIR / "fairseq-train"), str(data), "--user-dir", str(PLUGIN_DIR),
             "--task", "masked_s2s", "--langs", "en,fr", "--arch", "transformer_mass_tiny",
             "--criterion", "masked_s2s_loss", "--optimizer", "adam", "--lr", "0.001",
             "--max-tokens", "300", "--seed", "1", "--num-workers", "0", "--dropout", "0",
             "--fp16", "--fp16-init-scale", "128", "--fp16-scale-window", "4",
             "--disable-validation", "--max-update", str(updates), "--save-dir", str(save_dir)],
            cwd=REPO, env=cli_env(), check=True, capture_output=True)
        return checkpoint_utils.load_checkpoint_to_cpu(str(save_dir / "checkpoint_last.pt"))

    straight = train(tmp_path / "straight", 12)
    train(tmp_path / "resumed", 6)
    resumed = train(tmp_path / "resumed", 12)
    scale = [s["last_optimizer_state"]["loss_scale"] for s in (straight, resumed)]
    assert scale[0] == scale[1] and scale[0] != 128  # the window of 4 moved it
    for name, weight in straight["model"].items():
        assert torch.allclose(weight.float(), resumed["model"][name].float(), atol=1e-3), name
