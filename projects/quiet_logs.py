"""Keeps projects/paper_analysis/__main__.py's output to its own progress lines."""

import logging
import warnings


def quiet_logs():
    """fairseq sets up INFO logging when imported, and torch warns about CPU
    data loading: only warnings and errors of these get through."""
    for name in ("", "fairseq", "mass_plugin", "matplotlib"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=UserWarning)
