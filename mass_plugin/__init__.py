"""MASS (Masked Sequence to Sequence pre-training) as a fairseq plugin.

Use with ``--user-dir mass_plugin``: importing the package registers the task
``masked_s2s``, the ``transformer_mass`` architectures and the criteria
``masked_s2s_loss`` and ``encoder_mlm_loss`` with fairseq, and lets fairseq
load checkpoints on torch >= 2.6 through an allow-list (see :mod:`mass_plugin.checkpoint_safety`).
It also makes fairseq's ``--no-repeat-ngram-size`` work on CPU (see
:mod:`mass_plugin.ngram_blocking`), and turns torch's cuDNN attention backend
off, which compiles a kernel for every new batch shape on a GPU (see
:mod:`mass_plugin.cuda_attention`).
"""

from . import (  # noqa: F401
    checkpoint_safety,
    criterions,
    cuda_attention,
    data,
    models,
    ngram_blocking,
    tasks,
)

checkpoint_safety.install()
ngram_blocking.install()
cuda_attention.install()

__version__ = "0.1.0"
