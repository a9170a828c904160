"""``python -m mass_plugin`` prints the directory to give fairseq's ``--user-dir``.

    fairseq-train ... --user-dir "$(python -m mass_plugin)"

works from any directory, whether the package was installed normally or in
editable mode.
"""

import os
import sys


def main() -> None:
    sys.stdout.write(os.path.dirname(os.path.abspath(__file__)) + "\n")


if __name__ == "__main__":
    main()
