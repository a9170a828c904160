"""Moved: this study is now `python -m projects.crosslingual.mine_pairs`."""
raise SystemExit("examples/mine_pairs.py has moved: from the repository root, run\n"
                 "  python -m projects.crosslingual.mine_pairs ...\n"
                 "with the same options (see projects/README.md)")
