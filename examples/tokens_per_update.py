"""Moved: this study is now `python -m mass_tools.tokens_per_update`."""
raise SystemExit("examples/tokens_per_update.py has moved: from the repository root, run\n"
                 "  python -m mass_tools.tokens_per_update ...\n"
                 "with the same options (see projects/README.md)")
