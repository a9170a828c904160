"""Moved: this study is now `python -m studies.mine_pairs`."""
raise SystemExit("examples/mine_pairs.py has moved: from the repository root, run\n"
                 "  python -m studies.mine_pairs ...\n"
                 "with the same options (see docs/studies.md)")
