"""Moved: this study is now `python -m projects.crosslingual.retrieval`."""
raise SystemExit("examples/xling_retrieval.py has moved: from the repository root, run\n"
                 "  python -m projects.crosslingual.retrieval ...\n"
                 "with the same options (see projects/README.md)")
