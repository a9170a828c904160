"""Load fairseq checkpoints on torch >= 2.6 without arbitrary unpickling.

torch >= 2.6 loads with ``weights_only=True``: only tensors, containers and
an allow-list of classes may be unpickled. fairseq checkpoints also hold an
``argparse.Namespace`` (the model arguments of ``--arch`` models such as
``transformer_mass``) and numpy scalars and arrays (the BLEU statistics that
``--eval-bleu`` keeps in the saved meters); we allow exactly those classes,
which only carry data.

Importing the plugin also wraps fairseq's ``load_checkpoint_to_cpu`` so that
a checkpoint that asks for anything else is refused with a message naming
the file and the offending global, before torch unpickles any of it.
"""

import argparse
import functools
import logging
import os
import pickle

import numpy as np
import torch
from fairseq import checkpoint_utils

logger = logging.getLogger(__name__)


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint needs code that is not on the allow-list to be loaded."""


class CorruptCheckpointError(RuntimeError):
    """A checkpoint file is truncated, empty or not a torch checkpoint."""


def _numpy_scalar_globals():
    # numpy scalars pickle as numpy.core.multiarray.scalar(dtype, bytes),
    # arrays as _reconstruct(ndarray, shape, dtype) plus their raw data
    try:
        from numpy._core.multiarray import _reconstruct, scalar  # numpy >= 2
    except ImportError:
        from numpy.core.multiarray import _reconstruct, scalar
    found = [scalar, np.dtype, _reconstruct, np.ndarray]
    dtypes = getattr(np, "dtypes", None)  # numpy >= 1.25
    if dtypes is not None:
        for name in ("Float64DType", "Float32DType", "Int64DType", "Int32DType",
                     "BoolDType"):
            if hasattr(dtypes, name):
                found.append(getattr(dtypes, name))
    return found


SAFE_GLOBALS = [argparse.Namespace] + _numpy_scalar_globals()


def allow_fairseq_checkpoint_classes() -> None:
    """Add the data-only classes of fairseq checkpoints to torch's allow-list."""
    torch.serialization.add_safe_globals(SAFE_GLOBALS)


def unsafe_globals(path) -> list:
    """Globals in the pickle of ``path`` that ``weights_only`` would refuse.

    Reads the pickle's opcodes without executing them. Returns [] for files
    torch cannot scan this way (legacy format), leaving them to torch's own
    ``weights_only`` loader.
    """
    try:
        return sorted(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except ValueError:
        return []


def check_before_loading(path) -> None:
    """Refuse an empty, damaged or unsafe checkpoint before unpickling it."""
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        return  # remote paths are fetched and checked by fairseq / torch
    if os.path.getsize(path) == 0:
        raise CorruptCheckpointError(f"checkpoint {path} is empty")
    try:
        refused = unsafe_globals(path)
    except RuntimeError as err:  # torch's zip reader on a damaged file
        raise CorruptCheckpointError(
            f"checkpoint {path} is truncated or corrupted ({err}); "
            "use another checkpoint, e.g. checkpoint_last.pt or an earlier one"
        ) from err
    if refused:
        raise UnsafeCheckpointError(
            f"refusing to load checkpoint {path}: unpickling it would import "
            f"{', '.join(refused)}, which a fairseq checkpoint never needs and "
            "which could run code. Nothing from the file was executed. If you "
            "made this file yourself, re-save its tensors with torch.save of a "
            "plain dict."
        )


def _refuse_unsafe(load):
    @functools.wraps(load)
    def load_checkpoint_to_cpu(path, *args, **kwargs):
        check_before_loading(path)
        try:
            return load(path, *args, **kwargs)
        except pickle.UnpicklingError as err:
            if isinstance(err, UnsafeCheckpointError):
                raise
            raise UnsafeCheckpointError(
                f"refusing to load checkpoint {path}: {err}"
            ) from err

    load_checkpoint_to_cpu.mass_plugin_safe = True
    return load_checkpoint_to_cpu


def install() -> None:
    """Allow fairseq's data classes and guard fairseq's checkpoint loader."""
    allow_fairseq_checkpoint_classes()
    if not getattr(checkpoint_utils.load_checkpoint_to_cpu, "mass_plugin_safe", False):
        checkpoint_utils.load_checkpoint_to_cpu = _refuse_unsafe(
            checkpoint_utils.load_checkpoint_to_cpu
        )
