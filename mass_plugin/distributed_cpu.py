"""fairseq's distributed training on machines without a GPU: two guarded fixes.

fairseq 0.12 assumes CUDA in two places that a CPU run (``--cpu
--distributed-backend gloo``) reaches:

* a process started by ``torchrun`` (or ``torch.distributed.launch``) takes
  its device as ``rank % torch.cuda.device_count()``, a division by zero
  without a GPU (``_infer_torch_distributed_launch_init``);
* ``--ddp-backend pytorch_ddp`` (the default, ``c10d``) wraps the model in
  torch's ``DistributedDataParallel`` with ``device_ids=[device_id]``, which
  torch refuses for a module on the CPU;
* and ``--distributed-world-size N`` without a launcher spawns one process per
  GPU, and with none fails on an assertion about available devices.

:func:`install` replaces them with versions that do what fairseq does
wherever a GPU is visible, and on a CPU-only machine take device 0, pass no
device ids (what torch documents for CPU modules), and say which torchrun
command starts the processes instead. Nothing changes on a
machine with a GPU: the launch is fairseq's own, and a module on a GPU keeps
its device ids.
"""

import os

import torch
from fairseq.distributed import utils as distributed_utils
from fairseq.models import distributed_fairseq_model
from torch.nn.parallel import DistributedDataParallel

_fairseq_launch_init = distributed_utils._infer_torch_distributed_launch_init
_fairseq_single_node_init = distributed_utils._infer_single_node_init


def _launch_init(cfg):
    """fairseq's torchrun set-up; without a GPU, device 0 instead of a modulo by 0."""
    if torch.cuda.device_count() > 0:
        return _fairseq_launch_init(cfg)
    # the launcher's environment, as fairseq reads it, and the one (CPU) device
    cfg.distributed_init_method = "env://"
    cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
    cfg.distributed_rank = int(os.environ["RANK"])
    cfg.device_id = 0
    cfg.distributed_no_spawn = True  # the launcher started every process


def _single_node_init(cfg):
    """fairseq's own spawn (one process per GPU); without a GPU, the launcher to use."""
    if torch.cuda.device_count() == 0:
        n = cfg.distributed_world_size
        raise ValueError(
            f"--distributed-world-size {n}: fairseq starts one process per GPU and this "
            "machine has none. On CPUs, start the processes with torchrun: torchrun "
            f"--nproc_per_node {n} $(which fairseq-train) ... --cpu --distributed-backend gloo "
            f"--distributed-world-size {n} (docs/scale.md)")
    return _fairseq_single_node_init(cfg)


class DeviceAwareDDP(DistributedDataParallel):
    """torch's DistributedDataParallel, without device ids for a CPU module."""

    def __init__(self, module, device_ids=None, output_device=None, **kwargs):
        first = next(module.parameters(), None)
        if first is not None and first.device.type == "cpu":
            device_ids = output_device = None
        super().__init__(module, device_ids=device_ids, output_device=output_device, **kwargs)


def install() -> None:
    """Make fairseq's torchrun launch and pytorch_ddp backend work on a CPU."""
    distributed_utils._infer_torch_distributed_launch_init = _launch_init
    distributed_utils._infer_single_node_init = _single_node_init
    distributed_fairseq_model.DistributedDataParallel = DeviceAwareDDP
