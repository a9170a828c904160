"""ruff over the whole project (unused imports, undefined names, style)."""

import subprocess

from conftest import BIN_DIR, REPO


def test_ruff_finds_nothing():
    out = subprocess.run([str(BIN_DIR / "ruff"), "check", "."], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
