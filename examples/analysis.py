"""Moved: this study is now `python -m studies.paper_analysis`."""
raise SystemExit("examples/analysis.py has moved: from the repository root, run\n"
                 "  python -m studies.paper_analysis ...\n"
                 "with the same options (see docs/studies.md)")
