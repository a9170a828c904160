"""Moved: this study is now `python -m studies.low_resource_curve`."""
raise SystemExit("examples/low_resource_curve.py has moved: from the repository root, run\n"
                 "  python -m studies.low_resource_curve ...\n"
                 "with the same options (see docs/studies.md)")
