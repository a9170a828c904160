"""Moved: this study is now `python -m studies.crosslingual_retrieval`."""
raise SystemExit("examples/xling_retrieval.py has moved: from the repository root, run\n"
                 "  python -m studies.crosslingual_retrieval ...\n"
                 "with the same options (see docs/studies.md)")
