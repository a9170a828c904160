"""The house's limits, kept in CI: README.md at most 300 lines (the front
door; the rest links to docs/), shell scripts at most 150 lines, Python
modules at most 400 (the test files aside), a claim and its number in
docs/results.md's summary at most 300 characters together (the rest belongs
on the row's page), and no edits of ``sys.path`` or ``PYTHONPATH`` in the
project's code (programs run as ``python -m``, or import through the
installed packages)."""

import os
import re
import subprocess

from conftest import REPO

README_LINES, SHELL_LINES, PYTHON_LINES = 300, 150, 400
SUMMARY_ROW_CHARS = 300  # a results summary row's claim and number together
# folders that hold no file of the project (.gitignore's, and git's own)
NOT_THE_PROJECT = {".git", ".venv", "venv", "build", "dist", "work", "checkpoints",
                   "__pycache__", ".pytest_cache", ".ruff_cache"}
PATH_EDITS = re.compile(
    r"sys\.path\s*(\.\s*(insert|append|extend)\s*\(|\[[^\]]*\]\s*=|\+?=)"  # sys.path changed
    r"|[\"']PYTHONPATH[\"']\s*[:\]]"  # {"PYTHONPATH": ...} or env["PYTHONPATH"] = ...
    r"|\bPYTHONPATH=")  # PYTHONPATH=... in a shell line


def project_files():
    """The checkout's files, as paths relative to it: those git tracks or
    would (not ignored); without git, every file outside NOT_THE_PROJECT."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], cwd=REPO, capture_output=True,
                                check=True).stdout.decode()
        return sorted({name for name in listed.split("\0")
                       if name and (REPO / name).is_file()})
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, subfolders, names in os.walk(REPO):
            subfolders[:] = [d for d in subfolders
                             if d not in NOT_THE_PROJECT and not d.endswith(".egg-info")]
            found += [os.path.relpath(os.path.join(folder, n), REPO) for n in names]
        return sorted(found)


def is_shell(name):
    """A shell script: NAME.sh, or a file whose first line runs bash or sh."""
    if name.endswith(".sh"):
        return True
    with open(REPO / name, "rb") as f:
        first = f.readline(200)
    return re.match(rb"#!\s*\S*(/env\s+)?\S*\b(ba)?sh\b", first) is not None


def line_count(name):
    with open(REPO / name, "rb") as f:
        return sum(1 for _ in f)


def too_long(names, limit):
    """'NAME: N lines (limit L)' for each of ``names`` over ``limit``."""
    return [f"{name}: {count} lines (limit {limit})" for name in names
            if (count := line_count(name)) > limit]


def test_readme_shell_scripts_and_python_modules_keep_their_lengths():
    files = project_files()
    python = [n for n in files if n.endswith(".py") and not n.startswith("tests/")]
    shell = [n for n in files if is_shell(n)]
    assert "README.md" in files and python and shell
    over = (too_long(["README.md"], README_LINES) + too_long(shell, SHELL_LINES)
            + too_long(python, PYTHON_LINES))
    assert not over, "over the house's limits:\n" + "\n".join(over)


def long_summary_rows(text, limit=SUMMARY_ROW_CHARS):
    """'CLAIM...: N characters' for each row of the table under '## Summary'
    in ``text`` whose claim and number cells hold more than ``limit``."""
    rows = []
    for line in text.split("## Summary", 1)[1].splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    header, body = rows[0], rows[2:]
    claim, number = header.index("claim"), header.index("number")
    return [f"{row[claim][:60]}...: {size} characters (limit {limit})" for row in body
            if (size := len(row[claim]) + len(row[number])) > limit]


def test_results_summary_rows_keep_claim_and_number_short():
    text = (REPO / "docs" / "results.md").read_text(encoding="utf-8")
    long_rows = long_summary_rows(text)
    assert not long_rows, ("docs/results.md's summary: move what is not the claim or its "
                           "number to the row's page:\n" + "\n".join(long_rows))


def test_the_row_limit_counts_claim_and_number_only():
    row = "| {} | {} | `a long command` {} | [page](p.md) | raw |\n"
    page = ("## Summary\n\n| claim | number | command | link | raw output |\n"
            "| --- | --- | --- | --- | --- |\n" + row.format("c" * 200, "1" * 100, "x" * 500)
            + row.format("c" * 200, "1" * 101, "") + "\nprose after the table\n")
    assert long_summary_rows(page) == [f"{'c' * 60}...: 301 characters (limit 300)"]


# the tests' warm server stands in for a new interpreter, and sets up the
# import path that one would start with (PYTHONPATH, the working directory)
STANDS_IN_FOR_PYTHON = "tests/helpers/warm_server.py"


def test_no_code_edits_sys_path_or_pythonpath():
    itself = os.path.relpath(__file__, REPO)
    code = [n for n in project_files()
            if (n.endswith(".py") or is_shell(n)) and n not in (itself, STANDS_IN_FOR_PYTHON)]
    edits = []
    for name in code:
        text = (REPO / name).read_text(encoding="utf-8", errors="replace")
        edits += [f"{name}:{number}: {line.strip()}"
                  for number, line in enumerate(text.splitlines(), start=1)
                  if PATH_EDITS.search(line)]
    assert not edits, ("sys.path or PYTHONPATH edited (run it as python -m, or import "
                       "through the package):\n" + "\n".join(edits))
