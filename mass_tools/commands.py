"""The console commands that ``pip install`` puts on PATH, one per tool.

``mass-binarize ARGS`` is ``python -m mass_tools.binarize ARGS``: the same
options and the same one-line error messages (exit status 1) for bad input.
"""

import importlib

COMMANDS = {
    "mass-tokenize": "tokenize_moses",
    "mass-learn-subwords": "learn_subwords",
    "mass-apply-subwords": "apply_subwords",
    "mass-binarize": "binarize",
    "mass-check-data-bin": "data_bin_record",
    "mass-select-in-domain": "select_in_domain",
    "mass-fetch-wmt": "fetch_wmt",
    "mass-download": "download",
    "mass-sample-pairs": "sample_pairs",
    "mass-extract-xsum": "extract_xsum",
    "mass-tokens-per-update": "tokens_per_update",
    "mass-output-stats": "output_stats",
    "mass-score-rouge": "score_rouge",
    "mass-translate-ct2": "translate_ct2",
    "mass-export": "export",
}


def _command(module):
    def run():
        from mass_tools.textio import run_main

        run_main(importlib.import_module(f"mass_tools.{module}").main)
    run.__doc__ = f"The command for ``python -m mass_tools.{module}``."
    return run


# one function per tool, named as its module: mass_tools.commands.binarize, ...
for _module in COMMANDS.values():
    globals()[_module] = _command(_module)


def entry_points():
    """setup.py's console_scripts: ``mass-binarize=mass_tools.commands:binarize``, ...

    Read by setup.py from this file alone (no package import at build time)."""
    return [f"{name}=mass_tools.commands:{module}" for name, module in COMMANDS.items()]
