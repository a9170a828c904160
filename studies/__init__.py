"""The multi-run studies of mass-plugin, run from the repository root as
``python -m studies.NAME --help``. They drive the recipes of ``examples/``
and the scripts of ``data-prep/``, so they need a checkout, not just the
installed plugin.

Studies:
  paper_analysis          the paper's analysis: span length k, ablations, baselines
  low_resource_curve      MASS against random initialisation at 1k-10k pairs
  crosslingual_retrieval  how well a cross-lingual encoder aligns sentences
  mine_pairs              pseudo-parallel pairs mined with that encoder
Tools used by the studies:
  tokens_per_update       predicted tokens per pre-training update
  output_stats            language and repetition shares of a file of outputs
Shared parts:
  runner                  runs the recipes, one log per command, resumable
  quiet_logs              keeps a study's output to its own progress lines
The modules named ``paper_analysis_*`` and ``low_resource_*`` are the parts
of those two studies.
"""
