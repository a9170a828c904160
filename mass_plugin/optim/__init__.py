"""Optimizers the plugin registers with fairseq."""

from . import torch_adam  # noqa: F401
