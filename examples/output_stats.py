"""Moved: this study is now `python -m studies.output_stats`."""
raise SystemExit("examples/output_stats.py has moved: from the repository root, run\n"
                 "  python -m studies.output_stats ...\n"
                 "with the same options (see docs/studies.md)")
