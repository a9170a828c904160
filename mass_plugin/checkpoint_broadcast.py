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

The bytes come from rank 0 of the same job, which loaded the file through
the plugin's checks (:mod:`mass_plugin.checkpoint_safety`): they are what
rank 0 already holds, as trusted as the process itself. :func:`install`
therefore replaces fairseq's broadcast of pickled objects with one that
reads them back in full.
"""

import io

import torch
from fairseq.distributed import utils as distributed_utils


def broadcast_pickled(obj, src_rank, group, dist_device):
    """Send ``obj`` from ``src_rank`` to every rank of ``group``: its pickle's
    length, then its bytes, as tensors on ``dist_device``. Returns the object
    on every rank."""
    send = distributed_utils.get_rank(group) == src_rank
    if send:
        pickled = io.BytesIO()
        torch.save(obj, pickled)
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
    # rank src_rank's own object (see the module docstring): a full load
    return torch.load(io.BytesIO(data.cpu().numpy().tobytes()), map_location="cpu",
                      weights_only=False)


def install() -> None:
    """Use :func:`broadcast_pickled` for fairseq's objects sent between ranks."""
    distributed_utils._broadcast_object_slow = broadcast_pickled
