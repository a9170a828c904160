"""Load fairseq checkpoints on torch >= 2.6 without arbitrary unpickling.

torch >= 2.6 loads with ``weights_only=True``: only tensors, containers and
an allow-list of classes may be unpickled. fairseq checkpoints also hold an
``argparse.Namespace`` (the model arguments of ``--arch`` models such as
``transformer_mass``) and numpy scalars and arrays (the BLEU statistics that
``--eval-bleu`` keeps in the saved meters); we allow exactly those classes,
which only carry data.

Importing the plugin also wraps fairseq's two checkpoint readers,
``load_checkpoint_to_cpu`` (``--path``, ``--restore-file``,
``--finetune-from-model``, the hub interface) and ``load_ema_from_checkpoint``
(``--ema-seed-model``). The wrapper fails closed:

1. the path is resolved to the local file fairseq would read (a remote path
   is fetched by fairseq's ``PathManager`` first), and that very file is what
   gets checked and then loaded;
2. the file's pickle is scanned without executing it; a checkpoint that asks
   for any class off the allow-list is refused, naming the file and the
   class;
3. a file that cannot be scanned is refused: torch's legacy (non-zip) format,
   unless ``MASS_PLUGIN_TRUST_CHECKPOINT`` names that one file;
4. the load itself runs with torch's weights-only unpickler, also when
   ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` is set.
"""

import argparse
import contextlib
import functools
import logging
import os
import pickle

import numpy as np
import torch
from fairseq import checkpoint_utils
from fairseq.file_io import PathManager

logger = logging.getLogger(__name__)

# names one checkpoint in torch's legacy format that may be loaded unscanned
TRUST_ENV = "MASS_PLUGIN_TRUST_CHECKPOINT"
_FORCE_UNSAFE_ENV = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
_ZIP_MAGIC = b"PK\x03\x04"
_PICKLE_PROTO = b"\x80"  # a legacy torch file starts with a pickle


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint needs code that is not on the allow-list to be loaded."""


class UnscannableCheckpointError(UnsafeCheckpointError):
    """A checkpoint in a format whose imports cannot be read before loading."""


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
    """Globals in the pickle of the zip checkpoint ``path`` that
    ``weights_only`` would refuse, read from its opcodes without executing
    them. Raises CorruptCheckpointError when the archive cannot be read."""
    try:
        return sorted(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except (RuntimeError, ValueError, EOFError) as err:
        raise CorruptCheckpointError(
            f"checkpoint {path} is truncated or corrupted ({err}); "
            "use another checkpoint, e.g. checkpoint_last.pt or an earlier one"
        ) from err


def local_copy(path, load_on_all_ranks=False) -> str:
    """The local file to read for ``path``: the path itself, or a fresh copy
    of a remote file fetched by fairseq's ``PathManager``."""
    path = os.fspath(path)
    local = PathManager.get_local_path(path)
    if local != path and PathManager.path_requires_pathmanager(path):
        # a cached copy may be stale (a remote checkpoint_last.pt is
        # overwritten during training): fetch it anew, as fairseq does
        with contextlib.suppress(FileNotFoundError):
            os.remove(local)
        if load_on_all_ranks:
            torch.distributed.barrier()
        local = PathManager.get_local_path(path)
    return local


def is_trusted(path, local) -> bool:
    """Whether ``MASS_PLUGIN_TRUST_CHECKPOINT`` names this checkpoint."""
    named = os.environ.get(TRUST_ENV)
    if not named:
        return False
    if named == os.fspath(path):
        return True
    return os.path.realpath(named) == os.path.realpath(local)


def _file_kind(local) -> str:
    with open(local, "rb") as f:
        head = f.read(4)
    if head == _ZIP_MAGIC:
        return "zip"
    if head[:1] == _PICKLE_PROTO:
        return "legacy"
    return "other"


def check_before_loading(path, load_on_all_ranks=False) -> str:
    """Refuse a missing, empty, damaged, unsafe or unscannable checkpoint
    before anything in it is unpickled; return the local file to load."""
    local = local_copy(path, load_on_all_ranks)
    where = str(path) if local == os.fspath(path) else f"{path} (local copy {local})"
    if not os.path.isfile(local):
        raise FileNotFoundError(f"checkpoint {where} not found")
    if os.path.getsize(local) == 0:
        raise CorruptCheckpointError(f"checkpoint {where} is empty")
    kind = _file_kind(local)
    if kind == "other":
        raise CorruptCheckpointError(
            f"checkpoint {where} is not a torch checkpoint (neither a zip archive "
            "nor a pickle); use another checkpoint, e.g. checkpoint_last.pt"
        )
    if kind == "legacy":
        if is_trusted(path, local):
            logger.warning(
                f"loading {where} without scanning it: {TRUST_ENV} names it. It is "
                "in torch's legacy format, so only torch's weights-only loader "
                "stands between its pickle and your machine."
            )
            return local
        raise UnscannableCheckpointError(
            f"refusing to load checkpoint {where}: it is in torch's legacy (non-zip) "
            "format, whose imports cannot be checked before unpickling. If you trust "
            f"the file, set {TRUST_ENV}={local} for this one file (it is then "
            "unpickled by torch's weights-only loader alone; the plugin keeps that "
            f"loader on even if {_FORCE_UNSAFE_ENV} is set), or re-save it in the "
            "zip format with torch >= 1.6."
        )
    refused = unsafe_globals(local)
    if refused:
        raise UnsafeCheckpointError(
            f"refusing to load checkpoint {where}: unpickling it would import "
            f"{', '.join(refused)}, which a fairseq checkpoint never needs and "
            "which could run code. Nothing from the file was executed. If you "
            "made this file yourself, re-save its tensors with torch.save of a "
            "plain dict."
        )
    return local


@contextlib.contextmanager
def weights_only_loading():
    """Within this block torch.load calls that do not say ``weights_only``
    use the weights-only unpickler, whatever TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD
    says."""
    saved = os.environ.pop(_FORCE_UNSAFE_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[_FORCE_UNSAFE_ENV] = saved


def _guarded(load):
    """``load(path, ...)`` on the checked local copy, weights-only."""

    @functools.wraps(load)
    def guarded_load(path, *args, **kwargs):
        local = check_before_loading(path, kwargs.get("load_on_all_ranks", False))
        try:
            with weights_only_loading():
                return load(local, *args, **kwargs)
        except pickle.UnpicklingError as err:
            if isinstance(err, UnsafeCheckpointError):
                raise
            raise UnsafeCheckpointError(
                f"refusing to load checkpoint {path}: {err}"
            ) from err

    guarded_load.mass_plugin_safe = True
    return guarded_load


def install() -> None:
    """Allow fairseq's data classes and guard fairseq's checkpoint readers."""
    allow_fairseq_checkpoint_classes()
    for name in ("load_checkpoint_to_cpu", "load_ema_from_checkpoint"):
        load = getattr(checkpoint_utils, name)
        if not getattr(load, "mass_plugin_safe", False):
            setattr(checkpoint_utils, name, _guarded(load))
