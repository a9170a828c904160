"""The package as pip installs it: a wheel built from a copy of the checkout,
installed without its dependencies into a new venv that sees this suite's
site-packages (torch and fairseq are not installed or built again). From a
directory outside the checkout: the packages and their data come from the
venv, every tool is a console command, and ``fairseq-train --user-dir
"$(python -m mass_plugin)"`` trains with the installed plugin."""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import REPO

# end to end: every test here starts processes
pytestmark = pytest.mark.slow

# what a user's checkout holds; the rest (venvs, work folders, caches) is not copied
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "work", "checkpoints", "build", "dist",
                                    "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
                                    ".whl")


def run(cmd, cwd, env, timeout=600):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{cmd} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv environment, a directory outside the checkout)."""
    root = tmp_path_factory.mktemp("install")
    source, wheels, venv, outside = (root / name for name in
                                     ("source", "wheels", "venv", "elsewhere"))
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    outside.mkdir()
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(source)], root, dict(os.environ))
    shutil.rmtree(source)  # nothing may come from the copy once the wheel is built
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # the suite's packages (torch, fairseq, pip) behind the venv's own
    site = subprocess.run([str(venv / "bin/python"), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "suite.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "MASS_TEST_WARM_SOCKET")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(venv),
               PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    (wheel,) = wheels.glob("mass_plugin-*.whl")
    run(["python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        outside, env)
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
    assert user_dir.startswith(venv) and os.path.isdir(os.path.join(user_dir, "config"))
    shell = run(["python", "-m", "mass_tools.shell"], outside, env).stdout.strip()
    assert shell.startswith(venv) and os.path.isfile(os.path.join(shell, "common.sh"))


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


def test_fairseq_trains_with_the_installed_plugin_from_anywhere(installed, tmp_path):
    """The plugin's documented way from anywhere: --user-dir "$(python -m mass_plugin)"."""
    env, outside = installed
    text = outside / "mono.txt"
    text.write_text("".join(f"w{i % 7} w{i % 5} w{i % 3} w{i % 11}\n" for i in range(200)))
    run(["python", "-m", "fairseq_cli.preprocess", "--only-source", "--trainpref", str(text),
         "--destdir", str(tmp_path / "bin"), "--workers", "1"], outside, env)
    out = run(["bash", "-c", 'python -m fairseq_cli.train "$0" --user-dir "$(python -m '
               'mass_plugin)" --task masked_s2s --arch transformer_mass_tiny '
               "--criterion masked_s2s_loss --cpu --optimizer adam --lr 0.001 "
               "--max-tokens 1024 --max-update 2 --no-save --disable-validation "
               "--num-workers 0", str(tmp_path / "bin")], outside, env)
    log = out.stdout + out.stderr
    assert "done training" in log
    # the configuration fairseq logs names the installed plugin's folder
    assert f"'user_dir': '{env['VIRTUAL_ENV']}/lib/" in log and "site-packages/mass_plugin'" in log
