"""Moved: this study is now `python -m mass_tools.output_stats`."""
raise SystemExit("examples/output_stats.py has moved: from the repository root, run\n"
                 "  python -m mass_tools.output_stats ...\n"
                 "with the same options (see projects/README.md)")
