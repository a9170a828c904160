"""fairseq-train's --bf16 on a GPU: say what happens and what to use instead.

fairseq 0.12's command-line parser turns ``--bf16`` into ``--tpu`` as well
(bf16 was a TPU feature when it was written), so ``fairseq-train --bf16`` on
a GPU machine looks for a TPU through torch_xla and stops with a
ModuleNotFoundError. fairseq-hydra-train does not do this: with
``common.bf16=true`` it trains in bf16 on the GPU.
"""

import importlib.util

BF16_ON_GPU = (
    "--bf16: fairseq-train (fairseq 0.12) also sets --tpu when --bf16 is given, "
    "and torch_xla is not installed, so this run would stop looking for a TPU. "
    "On a GPU, train in bf16 with fairseq-hydra-train and common.bf16=true, e.g. "
    "fairseq-hydra-train --config-dir \"$(python -m mass_plugin)/config\" "
    "--config-name pretrain_base common.fp16=false common.bf16=true task.data=DATA "
    "(any fairseq-train option has a key there), or use --fp16"
)


def check_bf16_device(args) -> None:
    """Raise ValueError (BF16_ON_GPU) for --bf16 that fairseq turned into a TPU
    run on a machine without torch_xla."""
    wants_tpu = getattr(args, "bf16", False) and getattr(args, "tpu", False)
    if wants_tpu and importlib.util.find_spec("torch_xla") is None:
        raise ValueError(BF16_ON_GPU)
