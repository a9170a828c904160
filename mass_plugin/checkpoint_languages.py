"""Model options saved in a ``transformer_mass`` checkpoint, read without its tensors.

Fine-tuning keeps some choices of the --finetune-from-model checkpoint when
they are not given again: its language embeddings (without
--language-embeddings) and its --embedding-style. They are read from its
saved configuration; the tensors stay on disk.
"""

import logging

import torch
from fairseq import checkpoint_utils
from fairseq.file_io import PathManager

from .checkpoint_safety import check_before_loading

logger = logging.getLogger(__name__)


def saved_model_option(path, name):
    """Model option ``name`` as saved in the checkpoint at ``path``; None when
    there is no such file or the option was not saved (an older checkpoint)."""
    if not path or not PathManager.isfile(path):
        return None  # fairseq reports a missing --finetune-from-model itself
    local = check_before_loading(path)
    try:  # only the configuration is needed: the tensors stay on disk
        state = torch.load(local, map_location="cpu", mmap=True, weights_only=True)
    except (RuntimeError, ValueError):  # a legacy (non-zip) file cannot be mapped
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    cfg = state.get("cfg") or {"model": state.get("args")}
    model_cfg = cfg.get("model") if hasattr(cfg, "get") else None
    if hasattr(model_cfg, "get"):  # an omegaconf DictConfig
        return model_cfg.get(name, None)
    return getattr(model_cfg, name, None)  # a Namespace, or nothing


def checkpoint_languages(path) -> list:
    """The language embeddings of the checkpoint fine-tuning starts from."""
    given = saved_model_option(path, "language_embeddings")
    if not given or given == "none":
        return []
    logger.info(f"language embeddings {given} (from {path})")
    return [lang for lang in given.split(",") if lang]
