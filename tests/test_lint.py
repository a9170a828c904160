"""ruff over the whole project (unused imports, undefined names, style)."""

import subprocess
import sys

from conftest import REPO


def test_ruff_finds_nothing():
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
