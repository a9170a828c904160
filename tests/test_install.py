"""``pip install .`` (not editable) into a fresh venv, then, from a directory
outside the checkout: the tools' console commands, ``fairseq-train
--user-dir "$(python -m mass_plugin)"`` and the quickstart's steps run on the
installed packages alone."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

from conftest import REPO

# what a user's checkout holds; the rest (venvs, work folders, caches) is not copied
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "work", "checkpoints", "build", "dist",
                                    "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache")


def run(cmd, cwd, env, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{cmd} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv environment, a directory outside the checkout)."""
    root = tmp_path_factory.mktemp("install")
    source, venv, outside = root / "source", root / "venv", root / "elsewhere"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    outside.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv),
               PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    # the torch release this suite runs on, so that pip takes it, not the newest
    torch_pin = f"torch=={torch.__version__.split('+')[0]}"
    run(["python", "-m", "pip", "install", "-q", torch_pin, str(source)], outside, env,
        timeout=1800)
    shutil.rmtree(source)  # nothing may come from the copy once it is installed
    return env, outside


def test_the_packages_come_from_the_venv_not_a_checkout(installed):
    env, outside = installed
    out = run(["python", "-c", "import mass_plugin, mass_tools, mass_tools.shell as s; "
               "print(mass_plugin.__file__); print(mass_tools.__file__); print(s.__file__)"],
              outside, env).stdout
    venv = env["VIRTUAL_ENV"]
    assert all(line.startswith(venv) and "site-packages" in line
               for line in out.split()), out
    user_dir = run(["python", "-m", "mass_plugin"], outside, env).stdout.strip()
    assert user_dir.startswith(venv) and (os.path.isdir(os.path.join(user_dir, "config")))


def test_every_tool_is_a_console_command(installed):
    env, outside = installed
    out = run(["python", "-c", "from mass_tools.commands import COMMANDS; print(*COMMANDS)"],
              outside, env).stdout
    commands = out.split()
    assert "mass-binarize" in commands and "mass-learn-subwords" in commands
    for command in commands:
        assert shutil.which(command, path=env["PATH"]).startswith(env["VIRTUAL_ENV"])
        assert "usage:" in run([command, "--help"], outside, env).stdout
    # a tool's bad input is one line on stderr, exit status 1, no traceback
    proc = subprocess.run(["mass-binarize", "--destdir", "bin", "--langs", "en",
                           "--mono-train", "missing"], cwd=outside, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr


def test_the_quickstart_runs_on_the_installed_packages(installed):
    """The recipe from the checkout, everything it runs from the venv: the
    tools through ``python -m mass_tools.*``, the shell helpers from
    ``python -m mass_tools.shell``, fairseq with the installed plugin."""
    env, outside = installed
    work = outside / "quickstart"
    log = run(["bash", str(REPO / "examples/quickstart.sh")], outside,
              {**env, "WORK_DIR": str(work), "PRETRAIN_UPDATES": "4",
               "FINETUNE_UPDATES": "4"})
    log = log.stdout + log.stderr
    assert re.search(r"^\s*BLEU\|nrefs:1.* = [\d.]+ ", log, flags=re.M), log[-2000:]
    hypotheses = work / "checkpoints/ft-en-fr/checkpoint_best.test.en-fr.txt"
    assert len(hypotheses.read_text().splitlines()) == 300
    # the plugin's documented way from anywhere: --user-dir "$(python -m mass_plugin)"
    out = run(["bash", "-c", 'fairseq-train "$0" --user-dir "$(python -m mass_plugin)" '
               "--task masked_s2s --langs en,fr --arch transformer_mass "
               "--criterion masked_s2s_loss --cpu "
               "--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 "
               "--decoder-embed-dim 32 --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 "
               "--encoder-attention-heads 2 --decoder-attention-heads 2 --optimizer adam "
               "--lr 0.001 --max-tokens 1024 --max-update 2 --no-save --num-workers 0",
               str(work / "data-bin")], outside, env)
    assert "done training" in out.stdout + out.stderr
