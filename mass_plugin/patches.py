"""Every change the plugin makes to fairseq, torch and numpy when it is
imported, in one table.

Each row names what it replaces, why, the fairseq version it was written
against, the module with the replacement and the test that shows it is
needed. :func:`install` applies them all, once; under another fairseq
version it warns once, naming the rows, since each replaces code of that
version. Nothing else in the plugin changes fairseq or torch at import.
"""

import importlib
import logging
import types
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

WRITTEN_FOR = "0.12"  # fairseq 0.12.2, and fairseq-fixed 0.12.3.1 (the same code)


@dataclass(frozen=True)
class Patch:
    replaces: str  # what is replaced or changed
    why: str
    module: str  # the plugin module with the replacement (its install())
    test: str  # the test that fails without the row


PATCHES = (
    Patch("torch.serialization's allow-list (add_safe_globals); "
          "fairseq.checkpoint_utils.load_checkpoint_to_cpu and load_ema_from_checkpoint",
          "torch >= 2.6 loads weights-only and refuses fairseq checkpoints; the readers are "
          "wrapped to scan each file before unpickling it and to load it weights-only with "
          "an allow-list of fairseq's data classes, instead of turning the check off",
          "mass_plugin.checkpoint_safety", "tests/test_checkpoint_safety.py"),
    Patch("fairseq.distributed.utils._broadcast_object_slow",
          "rank 0 sends the checkpoint's configuration to the other ranks pickled, and "
          "torch >= 2.6 refuses it there: a job of several processes failed as soon as it "
          "loaded a checkpoint", "mass_plugin.checkpoint_broadcast",
          "tests/test_checkpoint_safety.py"),
    Patch("fairseq.ngram_repeat_block.NGramRepeatBlock._no_repeat_ngram",
          "on a CPU --no-repeat-ngram-size blocked nothing (fairseq issues #4709, #5206): "
          "the pure-PyTorch path matched the padded end of the token buffer",
          "mass_plugin.ngram_blocking", "tests/test_patches.py"),
    Patch("torch.backends.cuda.enable_cudnn_sdp(False)",
          "cuDNN's fused attention compiles a kernel for every new batch shape on a GPU: "
          "the quickstart's pre-training took 42 s with it, 8.6 s without",
          "mass_plugin.cuda_attention", "tests/test_gpu.py"),
    Patch("fairseq.distributed.utils._infer_torch_distributed_launch_init and "
          "_infer_single_node_init; fairseq.models.distributed_fairseq_model."
          "DistributedDataParallel",
          "fairseq's torchrun launch divides by the GPU count, its spawn asserts GPUs and "
          "its pytorch_ddp passes device ids for a CPU module: without them no job of "
          "several processes runs on CPUs", "mass_plugin.distributed_cpu",
          "tests/test_launchers.py"),
    Patch("numpy as seen by fairseq.data.token_block_dataset and "
          "fairseq.data.language_pair_dataset (numpy 2 only)",
          "numpy 2 removed np.compat.long, which fairseq 0.12 calls when it cuts text into "
          "blocks (--task denoising) and buckets lengths (--num-batch-buckets)",
          "mass_plugin.patches", "tests/test_patches.py"),
)

NUMPY_USERS = ("fairseq.data.token_block_dataset", "fairseq.data.language_pair_dataset")


class _NumpyWithCompat(types.ModuleType):
    """numpy, plus the ``compat.long`` (``int``) that numpy 2 removed."""

    compat = types.SimpleNamespace(long=int)

    def __getattr__(self, name):
        return getattr(np, name)


def install_numpy_compat() -> None:
    """Give fairseq's two modules that call np.compat.long a numpy that has it."""
    if hasattr(np, "compat"):
        return  # numpy 1.x
    for name in NUMPY_USERS:
        module = importlib.import_module(name)
        if not isinstance(module.np, _NumpyWithCompat):
            module.np = _NumpyWithCompat("numpy")


def _fairseq_version():
    import fairseq

    return getattr(fairseq, "__version__", "?")


def check_version(version=None) -> bool:
    """Whether ``version`` (fairseq's own by default) is the one the rows
    were written for; a warning naming the rows when it is not."""
    version = version or _fairseq_version()
    if version == WRITTEN_FOR or version.startswith(WRITTEN_FOR + "."):
        return True
    logger.warning(
        "mass_plugin replaces parts of fairseq %s and runs under fairseq %s; check these "
        "rows of mass_plugin/patches.py: %s", WRITTEN_FOR, version,
        "; ".join(patch.replaces for patch in PATCHES))
    return False


_installed = []


def install() -> None:
    """Apply every row, once per process."""
    if _installed:
        return
    _installed.append(True)
    check_version()
    for patch in PATCHES:
        if patch.module == __name__:
            install_numpy_compat()
        else:
            importlib.import_module(patch.module).install()
