"""The runner of benchmarks/gpu_check.py's steps. Each step's output goes
line by line to the console (prefixed with its name) and to its log; its
row goes to summary.md as it ends. A step past its limit is ended with its
whole process group (SIGTERM, SIGKILL after KILL_GRACE_S) and reported as
cut. Warm steps run in a fork of this process once a background thread has
imported WARM_MODULES; where that cannot be done safely (the imports
failed, CUDA was started here, another thread is alive) they run as
commands of their own."""

import importlib
import importlib.metadata
import os
import platform
import re
import runpy
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILL_GRACE_S = 3
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"  # is_available() without starting CUDA
WARM_MODULES = ("torch", "fairseq", "fairseq.checkpoint_utils", "fairseq.hub_utils",
                "fairseq_cli.train", "fairseq_cli.hydra_train", "hydra", "sentencepiece",
                "mass_plugin", "mass_plugin.models.transformer_mass")


def phases(steps):
    """[[the steps of a phase]], phases in order."""
    grouped = {}
    for s in steps:
        grouped.setdefault(s.phase, []).append(s)
    return [grouped[p] for p in sorted(grouped)]


class Summary:
    """summary.md: a header, then a row per step, written as each ends."""

    def __init__(self, path, header):
        self.path, self.lock = path, threading.Lock()
        with open(path, "w") as f:
            f.write(f"# GPU check, {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}\n\n"
                    f"{header}\n\n| step | result | time | limit | expected | measured |\n"
                    "| --- | --- | ---: | ---: | ---: | --- |\n")

    def row(self, s, result, seconds=None, measured=""):
        took = "" if seconds is None else f"{seconds:.0f} s"
        cells = [s.name, result, took, f"{s.limit_s} s", f"{s.expected_s} s",
                 measured.replace("|", "/").replace("\n", "; ")]
        with self.lock, open(self.path, "a") as f:
            f.write("| " + " | ".join(cells) + " |\n")


def require_gpu():
    """Exit 3 unless torch sees a CUDA GPU; CUDA itself is not started here
    (a fork of a process that started it cannot use it)."""
    os.environ[NVML_CHECK] = "1"
    import torch

    if not torch.cuda.is_available():
        sys.stderr.write("error: no CUDA GPU here (torch.cuda.is_available() is False): this "
                         "check is for a GPU machine; DRY_RUN=1 lists its steps\n")
        sys.exit(3)


def machine():
    """'GPU: ...; python ...; torch ...' for the summary, from nvidia-smi."""
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        gpu = ""
    import torch

    return (f"GPU: {gpu or 'unknown'}; python {platform.python_version()}; "
            f"torch {torch.__version__}")


class WarmUp(threading.Thread):
    """Imports WARM_MODULES in the background, while the first phase runs."""

    def __init__(self):
        super().__init__(daemon=True)
        self.error = ""

    def run(self):
        try:
            for name in WARM_MODULES:
                importlib.import_module(name)
        except BaseException as e:  # reported; the warm steps then run cold
            self.error = f"{type(e).__name__}: {e}"

    def why_not(self):
        """'' when a warm step can fork from here, else the reason."""
        if not self.is_alive() and not self.ident:
            return "the warm-up did not run"
        self.join()
        if self.error:
            return f"the warm-up imports failed ({self.error})"
        if "torch" in sys.modules and sys.modules["torch"].cuda.is_initialized():
            return "CUDA was started in the runner"
        if threading.active_count() > 1:
            return "another thread of the runner is alive"
        return ""


def exit_code(stop):
    """The exit status a Python process ends with on SystemExit ``stop``."""
    if stop.code is None or isinstance(stop.code, int):
        return stop.code or 0
    print(stop.code, file=sys.stderr)
    return 1


def run_in_process(command):
    """Run ``command`` here as its own process would: ``python [-u] SCRIPT
    ARGS``, ``python [-u] -m MODULE ARGS``, or a console script's name."""
    prog, *args = command
    if prog in ("python", "python3"):
        while args and args[0] == "-u":
            args.pop(0)
        if args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args)
            runpy.run_path(args[0], run_name="__main__")
        return 0
    found = importlib.metadata.entry_points(group="console_scripts", name=prog)
    if not found:
        sys.exit(f"error: {prog} is not a console script of this Python")
    sys.argv = [shutil.which(prog) or prog, *args]
    result = next(iter(found)).load()()
    return result if isinstance(result, int) else 0


def warm_child(command, write_fd):
    """In the forked child: a process group of its own, output to the pipe,
    ``command`` run in this process; never returns."""
    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the runner's handler
        os.setsid()
        os.dup2(write_fd, 1)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        sys.stdout.reconfigure(line_buffering=True)
        sys.stderr.reconfigure(line_buffering=True)
        os.chdir(REPO)
        code = run_in_process(command)
    except SystemExit as stop:
        code = exit_code(stop)
    except BaseException:  # the child reports whatever ended it, and exits
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def cold_env(s):
    env = dict(os.environ)
    env.pop(NVML_CHECK, None)
    env["PYTHONUNBUFFERED"] = "1"
    for key, value in s.env.items():
        env[key] = f"{value}{os.pathsep}{env[key]}" if key == "PYTHONPATH" and env.get(key) \
            else value
    return env


class Running:
    """A started step: its process (the leader of its own process group) and
    the thread that tees its output to the console and its log."""

    def __init__(self, s, log_path, console, warm):
        self.step, self.lines, self.code = s, [], None
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            if warm:
                self.proc, self.pid = None, os.fork()
                if self.pid == 0:
                    os.close(read_fd)
                    warm_child(s.command, write_fd)
            else:
                command = [sys.executable if i == 0 and c in ("python", "python3") else c
                           for i, c in enumerate(s.command)]
                self.proc = subprocess.Popen(command, cwd=REPO, env=cold_env(s),
                                             stdin=subprocess.DEVNULL, stdout=write_fd,
                                             stderr=subprocess.STDOUT, start_new_session=True)
                self.pid = self.proc.pid
        except OSError:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self.started = time.monotonic()
        self.reader = threading.Thread(target=self.tee, args=(read_fd, log_path, console),
                                       daemon=True)
        self.reader.start()

    def tee(self, fd, log_path, console):
        with os.fdopen(fd, "rb") as pipe, open(log_path, "ab") as log:
            for raw in pipe:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self.lines.append(line)
                with console:
                    print(f"[{self.step.name}] {line}", flush=True)

    def elapsed(self):
        return time.monotonic() - self.started

    def poll(self):
        """The exit status (negative: the signal) or None while it runs."""
        if self.code is None:
            if self.proc is not None:
                self.code = self.proc.poll()
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                self.code = os.waitstatus_to_exitcode(status) if pid else None
        return self.code

    def stop(self):
        """SIGTERM to the step's process group, SIGKILL after the grace."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            deadline = time.monotonic() + KILL_GRACE_S
            while sig == signal.SIGTERM and time.monotonic() < deadline:
                if self.poll() is not None:
                    break
                time.sleep(0.1)
        deadline = time.monotonic() + 10
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)


def last(found, n=1):
    return " ".join(found[-n:])


def pytest_measured(text):
    """The counts line, and each failure's test and message (as
    gpu_check_report.py prints them when they happen)."""
    failures = re.findall(r"^GPU-CHECK FAILED (.*)$", text, re.M)
    counts = re.findall(r"^=+ (.*\d+ (?:passed|failed|errors?|skipped|deselected).*) =+$",
                        text, re.M)
    return "; ".join(counts[-1:] + failures)


MEASURES = {
    "tests": pytest_measured,
    "quickstart": lambda t: last(re.findall(r"BLEU\|\S* = [0-9.]+", t)),
    "hub": lambda t: "; ".join(re.findall(r"^(?!cpu ).* float(?:32|16): .*$", t, re.M)),
    "ranks": lambda t: "; ".join(re.findall(r"^cuda (?:fp16|bf16): .*$", t, re.M)),
    "base": lambda t: last(re.findall(r"(?:num_updates|ups|wps)[= ][0-9.]+|"
                                      r"done training in [0-9.]+ s", t), 4),
    "online": lambda t: "; ".join(re.sub(r"\s+", " ", line) for line in
                                  re.findall(r"^(?:en-fr|fr-en)\s.*$", t, re.M)),
    "benchmark": lambda t: "; ".join(
        line.strip() for line in t.split("\nTargets\n", 1)[-1].split("\n\n")[0].splitlines()
        if "\nTargets\n" in t),
}


def measured(s, lines, passed):
    """What the step's output says it measured; for a failure without it,
    the last line that names an error (else the last line)."""
    text = "\n".join(lines)
    found = MEASURES.get(s.name.split("_")[0], lambda t: "")(text)
    if not passed and not found:
        errors = [line for line in lines if re.search(r"error|exception", line, re.I)]
        found = (errors or [line for line in lines if line.strip()] or [""])[-1].strip()
    return found[:400]


def start(s, out, warmup, console, summary):
    """Start step ``s``; None (its row written) when it cannot start."""
    log = os.path.join(out, s.log)
    if s.needs and not os.path.exists(s.needs):
        summary.row(s, f"not run: no {s.needs} (an earlier step makes it)")
        return None
    if s.fresh:
        shutil.rmtree(s.fresh, ignore_errors=True)
    why_not = warmup.why_not() if s.warm else ""
    with console:
        print(f"== {s.name} (limit {s.limit_s} s, expected {s.expected_s} s)"
              + (f", not warm: {why_not}" if why_not else ""), flush=True)
    with open(log, "a") as f:
        f.write(f"== {s.name}: {' '.join(s.command)}\n")
    try:
        return Running(s, log, console, warm=s.warm and not why_not)
    except OSError as e:
        summary.row(s, f"failed (cannot start: {e})")
        return None


def finish(r, result, took, console, summary):
    """End what the step left behind (its process group), write its row."""
    try:
        os.killpg(r.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    r.reader.join(timeout=5)
    summary.row(r.step, result, took, measured(r.step, r.lines, result == "passed"))
    with console:
        print(f"== {r.step.name}: {result} in {took:.0f} s", flush=True)
    return result


def run_phase(group, out, warmup, console, summary):
    """Run the steps of one phase side by side; each one's result. Stopped
    (SIGINT, SIGTERM), it ends the running steps and writes their rows."""
    running = [r for r in (start(s, out, warmup, console, summary) for s in group) if r]
    results = {s.name: "not run" for s in group}
    try:
        while running:
            time.sleep(0.2)
            for r in list(running):
                code, took = r.poll(), r.elapsed()
                if code is None and took <= r.step.limit_s:
                    continue
                if code is None:
                    r.stop()
                    result = f"cut at its {r.step.limit_s} s limit"
                else:
                    result = "passed" if code == 0 else f"failed (exit {code})"
                results[r.step.name] = finish(r, result, took, console, summary)
                running.remove(r)
    except KeyboardInterrupt:
        for r in running:
            r.stop()
            results[r.step.name] = finish(r, "stopped with the runner", r.elapsed(), console,
                                          summary)
        raise
    return results


def interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(steps, out, header):
    """Every phase in turn; 0 if every step passed, else 1."""
    for log in {s.log for s in steps}:
        open(os.path.join(out, log), "w").close()
    summary = Summary(os.path.join(out, "summary.md"), header)
    console, warmup = threading.Lock(), WarmUp()
    if any(s.warm for s in steps):
        warmup.start()
    results = {}
    signal.signal(signal.SIGTERM, interrupt)
    try:
        for group in phases(steps):
            results.update(run_phase(group, out, warmup, console, summary))
    except KeyboardInterrupt:
        print("== stopped: the steps after it were not run", flush=True)
        return 1
    with open(summary.path) as f:
        print("\n" + f.read(), flush=True)
    return 0 if all(r == "passed" for r in results.values()) else 1
