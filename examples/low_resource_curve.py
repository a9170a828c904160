"""Moved: this study is now `python -m projects.low_resource.curve`."""
raise SystemExit("examples/low_resource_curve.py has moved: from the repository root, run\n"
                 "  python -m projects.low_resource.curve ...\n"
                 "with the same options (see projects/README.md)")
