"""``python -m mass_tools.shell``: the folder of usage.sh and common.sh."""

from pathlib import Path

print(Path(__file__).resolve().parent)
