"""fairseq-train (fairseq_cli.train.cli_main, what the console script runs),
whose every rank also writes its model weights to SAVE_DIR/rank{R}.pt at the
end, and to SAVE_DIR/rank{R}.start.pt once its trainer has loaded what
training starts from (the last checkpoint, --finetune-from-model's, or
nothing: fairseq-train asks the trainer to load once, in every case):
fairseq saves checkpoints on rank 0 only, and the launcher tests compare the
weights of every rank. Run as ``torchrun ... tests/helpers/train_all_ranks.py
ARGS`` or ``python tests/helpers/train_all_ranks.py ARGS``."""

import os

import torch
from fairseq import trainer as fairseq_trainer
from fairseq_cli import train

_trainers = []
_load_checkpoint = fairseq_trainer.Trainer.load_checkpoint


def _save_weights(trainer, suffix):
    name = f"rank{trainer.data_parallel_rank}{suffix}.pt"
    os.makedirs(trainer.cfg.checkpoint.save_dir, exist_ok=True)
    torch.save({k: v.detach().cpu().clone() for k, v in trainer.get_model().state_dict().items()},
               os.path.join(trainer.cfg.checkpoint.save_dir, name))


def _load_then_save(self, *args, **kwargs):
    extra_state = _load_checkpoint(self, *args, **kwargs)
    _trainers.append(self)
    _save_weights(self, ".start")
    return extra_state


def main():
    fairseq_trainer.Trainer.load_checkpoint = _load_then_save
    train.cli_main()
    _save_weights(_trainers[-1], "")


if __name__ == "__main__":
    main()
