"""Attention kernels for fairseq's batches on CUDA: torch's cuDNN backend off.

fairseq batches sentences by length, so almost every batch has a shape of
its own, and its attention carries a padding mask. For such calls torch
(2.11 on an H200) picks cuDNN's fused attention, which generates and
compiles a kernel for each new shape and waits for the GPU on each call:
measured there, the quickstart's first pre-training epoch took 37 s and the
next epochs, over the same batches, 3 s each; in steady state the GPU was
busy for half of each step (docs/results.md, section 9). Importing the
plugin therefore turns the cuDNN backend of scaled-dot-product attention
off; torch then runs its memory-efficient (or flash) kernels, which need no
compilation. MASS_PLUGIN_CUDNN_ATTENTION=1 keeps cuDNN.
"""

import os

import torch

ENV = "MASS_PLUGIN_CUDNN_ATTENTION"


def install() -> None:
    """Turn torch's cuDNN attention backend off unless ENV is "1"."""
    if os.environ.get(ENV) == "1":
        return
    torch.backends.cuda.enable_cudnn_sdp(False)
