"""fairseq-train (fairseq_cli.train.cli_main, what the console script runs),
whose every rank also writes its model weights to SAVE_DIR/rank{R}.pt at the
end (and SAVE_DIR/rank{R}.start.pt when its trainer is built):
fairseq saves checkpoints on rank 0 only, and the launcher tests compare the
weights of every rank. Run as ``torchrun ... tests/helpers/train_all_ranks.py
ARGS`` or ``python tests/helpers/train_all_ranks.py ARGS``."""

import os

import torch
from fairseq import trainer as fairseq_trainer
from fairseq_cli import train

_trainers = []
_init = fairseq_trainer.Trainer.__init__


def _save_weights(trainer, suffix):
    name = f"rank{trainer.data_parallel_rank}{suffix}.pt"
    os.makedirs(trainer.cfg.checkpoint.save_dir, exist_ok=True)
    torch.save({k: v.detach().cpu().clone() for k, v in trainer.get_model().state_dict().items()},
               os.path.join(trainer.cfg.checkpoint.save_dir, name))


def _remember(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    _trainers.append(self)
    _save_weights(self, ".start")


def main():
    fairseq_trainer.Trainer.__init__ = _remember
    train.cli_main()
    _save_weights(_trainers[-1], "")


if __name__ == "__main__":
    main()
