"""Restoring a checkpoint in a job of several processes, on torch >= 2.6.

When a job of several processes resumes (``checkpoint_last.pt``,
``--restore-file``) or starts from a checkpoint (``--finetune-from-model``),
fairseq reads the file on rank 0 only and sends what it read to the other
ranks: the tensors as tensors, the rest (the configuration, the optimizer's
and the meters' state) pickled, which the other ranks read back with
``torch.load``. Since torch 2.6 that load is weights-only by default and
refuses the configuration (an ``omegaconf.DictConfig``), so every rank but
rank 0 stopped with an ``UnpicklingError``: training worked in one process
and failed in several as soon as a checkpoint was loaded.

:func:`install` replaces fairseq's broadcast of pickled objects with one
that keeps the plugin's rule for checkpoints: the receiving ranks load with
torch's weights-only unpickler and the allow-list of
:mod:`mass_plugin.checkpoint_safety` (plus fairseq's placeholder for the
tensors it sends apart). The sender turns each configuration into the plain
container fairseq itself writes into a checkpoint file, and the receivers
make it a configuration again, as fairseq does when it reads one.
"""

import copy
import io

import torch
from fairseq.distributed import utils as distributed_utils
from omegaconf import DictConfig, OmegaConf

from .checkpoint_safety import SAFE_GLOBALS

_CONFIG = "__mass_plugin_dictconfig__"  # marks a configuration sent as a container
# what a receiving rank may unpickle: the checkpoint allow-list, and the
# placeholder fairseq leaves where it took a tensor out to send it apart
RECEIVE_GLOBALS = SAFE_GLOBALS + [distributed_utils._TensorPlaceholder]


def _map(obj, convert):
    """``obj`` with ``convert`` applied to it, or inside its dicts, lists and tuples."""
    converted = convert(obj)
    if converted is not obj:
        return converted
    if isinstance(obj, dict):
        mapped = copy.copy(obj)  # keeps the kind of dict (OrderedDict, defaultdict)
        for key, value in obj.items():
            mapped[key] = _map(value, convert)
        return mapped
    if type(obj) in (list, tuple):
        return type(obj)(_map(value, convert) for value in obj)
    return obj


def _to_container(obj):
    if isinstance(obj, DictConfig):
        # what fairseq's Trainer writes into a checkpoint file
        return {_CONFIG: OmegaConf.to_container(obj, resolve=True, enum_to_str=True),
                "struct": bool(OmegaConf.is_struct(obj))}
    return obj


def _to_config(obj):
    if isinstance(obj, dict) and _CONFIG in obj:
        # as fairseq's load_checkpoint_to_cpu makes it from a file's container
        config = OmegaConf.create(obj[_CONFIG], flags={"allow_objects": True})
        OmegaConf.set_struct(config, obj["struct"])
        return config
    return obj


def portable(obj):
    """``obj`` with every configuration as a marked plain container."""
    return _map(obj, _to_container)


def load_portable(data: bytes):
    """What :func:`portable` made and ``torch.save`` wrote, read back with the
    weights-only unpickler and RECEIVE_GLOBALS, configurations restored."""
    # torch's safe_globals block takes its classes off the allow-list when it
    # ends, also those that were on it before: lend it only the missing ones
    allowed = set(torch.serialization.get_safe_globals())
    lent = [cls for cls in RECEIVE_GLOBALS if cls not in allowed]
    with torch.serialization.safe_globals(lent):
        obj = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    return _map(obj, _to_config)


def broadcast_pickled(obj, src_rank, group, dist_device):
    """Send ``obj`` from ``src_rank`` to every rank of ``group``: its pickle's
    length, then its bytes, as tensors on ``dist_device``. Returns the object
    on every rank."""
    send = distributed_utils.get_rank(group) == src_rank
    if send:
        pickled = io.BytesIO()
        torch.save(portable(obj), pickled)
        data = torch.frombuffer(bytearray(pickled.getvalue()), dtype=torch.uint8)
        size = torch.tensor([data.numel()], dtype=torch.long)
    else:
        size = torch.zeros(1, dtype=torch.long)
    size = size.to(dist_device)
    distributed_utils.broadcast(size, src=src_rank, group=group)
    if not send:
        data = torch.empty(int(size.item()), dtype=torch.uint8)
    data = data.to(dist_device)
    distributed_utils.broadcast(data, src=src_rank, group=group)
    if send:
        return obj
    return load_portable(data.cpu().numpy().tobytes())


def install() -> None:
    """Use :func:`broadcast_pickled` for fairseq's objects sent between ranks."""
    distributed_utils._broadcast_object_slow = broadcast_pickled
