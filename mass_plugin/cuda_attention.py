"""Attention kernels for fairseq's batches on CUDA: torch's cuDNN backend off.

fairseq batches sentences by length, so almost every batch has a shape of
its own, and its attention carries a padding mask. For such calls torch
(2.11 on an H200) picked cuDNN's fused attention, which builds and compiles
a kernel for each new shape. Measured there (docs/results.md, section 9),
the quickstart's pre-training (300 updates) took 42.2 s with it, its first
epoch 37 s and each next epoch, over the same batches, 3 s; without it 8.6
s. Once every shape has been seen the two are level (147 and 150 ms a step
for the base model). Importing the plugin therefore turns the cuDNN backend
of scaled-dot-product attention off; torch then runs its memory-efficient
(or flash) kernels, which need no compilation. MASS_PLUGIN_CUDNN_ATTENTION=1
keeps cuDNN.

The switch is process-wide on purpose. torch would let it be scoped, by
turning the backend off around the plugin's models' forward passes only,
but fairseq's own architectures trained with ``--user-dir`` (the
unsupervised repair recipe's ``transformer``, a model exported to stock
fairseq) run the same length-bucketed batches and would compile a kernel
per shape again.
"""

import os

import torch

ENV = "MASS_PLUGIN_CUDNN_ATTENTION"


def install() -> None:
    """Turn torch's cuDNN attention backend off unless ENV is "1"."""
    if os.environ.get(ENV) == "1":
        return
    torch.backends.cuda.enable_cudnn_sdp(False)
