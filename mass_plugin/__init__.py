"""MASS (Masked Sequence to Sequence pre-training) as a fairseq plugin.

Use with ``--user-dir mass_plugin``: importing the package registers the task
``masked_s2s``, the ``transformer_mass`` architectures, the criteria
``masked_s2s_loss`` and ``encoder_mlm_loss`` and the optimizer
``torch_adam`` with fairseq, and applies the plugin's changes to fairseq,
torch and numpy, each a row of one table (:mod:`mass_plugin.patches`):
checkpoints load on torch >= 2.6 through an allow-list and a scan of each
file, also in jobs of several processes; ``--no-repeat-ngram-size`` works on
CPU; torch's cuDNN attention backend is off; fairseq's torchrun launch and
its ``pytorch_ddp`` backend run on CPUs; fairseq's ``np.compat`` calls work
under numpy 2.
"""

from . import criterions, data, models, optim, patches, tasks  # noqa: F401

patches.install()

__version__ = "0.1.0"
