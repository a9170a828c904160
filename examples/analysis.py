"""Moved: this study is now `python -m projects.paper_analysis`."""
raise SystemExit("examples/analysis.py has moved: from the repository root, run\n"
                 "  python -m projects.paper_analysis ...\n"
                 "with the same options (see projects/README.md)")
