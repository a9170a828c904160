"""The languages a ``transformer_mass`` checkpoint has embeddings for.

Fine-tuning without --language-embeddings keeps the languages of the
--finetune-from-model checkpoint; they are read from its saved
configuration, without loading its tensors.
"""

import logging

import torch
from fairseq import checkpoint_utils
from fairseq.file_io import PathManager

from .checkpoint_safety import check_before_loading

logger = logging.getLogger(__name__)


def checkpoint_languages(path) -> list:
    """The language embeddings of the checkpoint fine-tuning starts from."""
    if not path or not PathManager.isfile(path):
        return []  # fairseq reports a missing --finetune-from-model itself
    local = check_before_loading(path)
    try:  # only the configuration is needed: the tensors stay on disk
        state = torch.load(local, map_location="cpu", mmap=True, weights_only=True)
    except (RuntimeError, ValueError):  # a legacy (non-zip) file cannot be mapped
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
    given = _saved_language_embeddings(state)
    if not given or given == "none":
        return []
    logger.info(f"language embeddings {given} (from {path})")
    return [lang for lang in given.split(",") if lang]


def _saved_language_embeddings(state):
    """--language-embeddings as saved in a checkpoint's configuration."""
    cfg = state.get("cfg") or {"model": state.get("args")}
    model_cfg = cfg.get("model") if hasattr(cfg, "get") else None
    if hasattr(model_cfg, "get"):  # an omegaconf DictConfig
        return model_cfg.get("language_embeddings", None)
    return getattr(model_cfg, "language_embeddings", None)  # a Namespace, or nothing
