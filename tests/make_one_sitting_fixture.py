"""Writes tests/data/one_sitting_tiny.json: what the unsupervised recipe's
one-sitting run writes at a tiny size (tests/test_repair_recipe.py's
settings, fixed seeds, one thread): the sha256 of its lexicons, word-by-word
files, round pairs, scored outputs and translations, and its tables' rows
without their minutes.

The committed file was written by the code of commit caad472, the last
before projects/unsupervised was folded into eight modules, with this
script and tests/test_repair_recipe.py (its helpers) in the checkout:
test_repair_recipe.py's first test checks that today's code writes the same.
Run it again (python tests/make_one_sitting_fixture.py COMMIT) only to
replace the fixture on purpose, naming the commit whose code ran it.
"""

import json
import sys
import tempfile
from pathlib import Path

from test_repair_recipe import FIXTURE, TRANSLATOR, manifest, one_sitting, tiny_corpora


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/make_one_sitting_fixture.py COMMIT (the code it runs)")
    with tempfile.TemporaryDirectory() as tmp:
        data, work = tiny_corpora(Path(tmp) / "data"), Path(tmp) / "work"
        for variables in ({}, TRANSLATOR):
            code, log = one_sitting(data, work, **variables)
            if code:
                sys.exit(log[-4000:])
        found = manifest(work)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps({"commit": sys.argv[1], "manifest": found}, indent=1,
                                  sort_keys=True) + "\n")
    print(f"{FIXTURE}: {len(found)} entries")


if __name__ == "__main__":
    main()
