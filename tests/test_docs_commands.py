"""Every command in the README and docs runs as written: the scripts and
modules their code blocks name exist and answer --help."""

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import REPO, cli_env

PAGES = [REPO / "README.md", REPO / "examples" / "README.md",
         *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "projects").rglob("*.md"))]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
# a block whose info string names a commit (```bash at caad472) holds commands of a log's
# history as they ran at that commit, since removed: not commands of today's code
AT_COMMIT = re.compile(r"\bat [0-9a-f]{7,40}\b")
MODULE = re.compile(r"\bpython3?\s+-m\s+([A-Za-z_][\w.]*)")
SCRIPT = re.compile(r"(?:^|[\s\"'=(])(?:\./)?"
                    r"((?:examples|projects|benchmarks|mass_plugin|mass_tools)"
                    r"/[\w./-]+\.(?:py|sh))\b", re.M)
OURS = ("mass_plugin", "mass_tools", "projects", "benchmarks")


def code_blocks(page):
    """The fenced code of ``page`` (not the blocks of a past commit), continuation
    lines joined, comments dropped."""
    for info, block in FENCE.findall(page.read_text(encoding="utf-8")):
        if AT_COMMIT.search(info):
            continue
        for line in block.replace("\\\n", " ").splitlines():
            yield re.sub(r"(^|\s)#.*", "", line)


def named_commands():
    """{(kind, name): first page naming it}, kind 'module' or 'script'."""
    found = {}
    for page in PAGES:
        for line in code_blocks(page):
            for name in MODULE.findall(line):
                if name.split(".")[0] in OURS:
                    found.setdefault(("module", name), page.relative_to(REPO))
            for name in SCRIPT.findall(line):
                found.setdefault(("script", name), page.relative_to(REPO))
    return found


COMMANDS = named_commands()


def help_command(kind, name):
    if kind == "module":
        return ["python", "-m", name, "--help"]
    runner = ["bash"] if name.endswith(".sh") else ["python"]
    return [*runner, name, "--help"]


def test_the_pages_name_the_main_commands():
    names = {name for _, name in COMMANDS}
    for expected in ("examples/quickstart.sh", "examples/pretrain.sh", "projects.paper_analysis",
                     "projects.low_resource.curve", "mass_tools.export", "mass_tools.binarize"):
        assert expected in names, f"no page names {expected}: the parser or the docs broke"


def test_every_named_script_and_module_exists():
    missing = []
    for (kind, name), page in COMMANDS.items():
        if kind == "module":
            path = REPO / name.replace(".", "/")
            exists = path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()
        else:
            exists = (REPO / name).is_file()
        if not exists:
            missing.append(f"{page}: {name}")
    assert not missing, "named but missing:\n" + "\n".join(missing)


@pytest.mark.slow
def test_every_named_script_and_module_prints_help():
    def run(item):
        (kind, name), page = item
        proc = subprocess.run(help_command(kind, name), cwd=REPO, env=cli_env(),
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not proc.stdout.strip():
            return f"{page}: {name} --help: exit {proc.returncode}\n{proc.stderr[-500:]}"
        return None

    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(run, COMMANDS.items()) if f]
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("old,new", [("analysis", "projects.paper_analysis"),
                                     ("xling_retrieval", "projects.crosslingual.retrieval")])
def test_a_moved_study_names_its_new_command(old, new):
    proc = subprocess.run([sys.executable, f"examples/{old}.py", "--help"], cwd=REPO,
                          env=cli_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert f"python -m {new}" in proc.stderr
