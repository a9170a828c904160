"""MASS (Masked Sequence to Sequence pre-training) as a fairseq plugin.

Use with ``--user-dir mass_plugin``: importing the package registers the task
``masked_s2s``, the ``transformer_mass`` architectures and the criteria
``masked_s2s_loss`` and ``encoder_mlm_loss`` and the optimizer ``torch_adam``
(:mod:`mass_plugin.optim.torch_adam`) with fairseq, and lets fairseq
load checkpoints on torch >= 2.6 through an allow-list (see :mod:`mass_plugin.checkpoint_safety`),
also in jobs of several processes (see :mod:`mass_plugin.checkpoint_broadcast`).
It also makes fairseq's ``--no-repeat-ngram-size`` work on CPU (see
:mod:`mass_plugin.ngram_blocking`), and turns torch's cuDNN attention backend
off, which compiles a kernel for every new batch shape on a GPU (see
:mod:`mass_plugin.cuda_attention`), and lets fairseq's torchrun launch and
its default ``pytorch_ddp`` backend run on CPUs (see
:mod:`mass_plugin.distributed_cpu`).
"""

from . import (  # noqa: F401
    checkpoint_broadcast,
    checkpoint_safety,
    criterions,
    cuda_attention,
    data,
    distributed_cpu,
    models,
    ngram_blocking,
    optim,
    tasks,
)

checkpoint_safety.install()
checkpoint_broadcast.install()
ngram_blocking.install()
cuda_attention.install()
distributed_cpu.install()

__version__ = "0.1.0"
