"""Two ranks on one device against one rank with --update-freq 2.

    python benchmarks/two_ranks.py --data-bin work/quickstart/data-bin --device cuda

trains the same small ``transformer_mass`` twice on ``--data-bin`` (the
layout of examples/prepare_data.sh, languages ``--langs``): once as one
process with ``--update-freq 2``, once as two processes started by torchrun
on the same device (gloo: NCCL refuses two ranks on one GPU), with fairseq's
default DDP backend. Each update of the two ranks covers one batch a rank,
so both runs see the same batches an update and their per-update training
losses must agree: within ``--tolerance`` (default 0.05 nats/bits as logged)
at every update. Prints both loss curves' largest gap and each run's words
per second, and exits 1 if the curves part. On a GPU in fp16 (default there)
or bf16 (``--precision bf16``, set as fairseq-hydra-train's common.bf16);
on a CPU in fp32, which checks this script itself.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

MODEL = ["--arch", "transformer_mass_tiny", "--dropout", "0", "--attention-dropout", "0",
         "--activation-dropout", "0"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-bin", required=True, help="binarized monolingual data")
    parser.add_argument("--langs", default="en,fr", help="--langs of masked_s2s ('' for none)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default=None,
                        help="default: fp16 on cuda, fp32 on cpu")
    parser.add_argument("--updates", type=int, default=40)
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--model-args", default=" ".join(MODEL),
                        help="the model's fairseq-train options")
    parser.add_argument("--tolerance", type=float, default=0.05,
                        help="largest per-update loss gap allowed")
    parser.add_argument("--work-dir", default=None, help="logs and checkpoints (a temp dir)")
    args = parser.parse_args(argv)
    args.precision = args.precision or ("fp16" if args.device == "cuda" else "fp32")
    if args.device == "cpu" and args.precision != "fp32":
        parser.error(f"--precision {args.precision} needs --device cuda")
    return args


def train_args(args, save_dir):
    plugin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mass_plugin")
    argv = [args.data_bin, "--user-dir", plugin, "--task", "masked_s2s",
            "--criterion", "masked_s2s_loss", *args.model_args.split(),
            "--optimizer", "adam", "--lr", "0.001", "--max-tokens", str(args.max_tokens),
            "--max-update", str(args.updates), "--seed", "3", "--num-workers", "0",
            "--disable-validation", "--no-save", "--save-dir", save_dir,
            "--log-format", "json", "--log-interval", "1"]
    if args.langs:
        argv += ["--langs", args.langs]
    if args.device == "cpu":
        return argv + ["--cpu"]
    if args.precision == "fp16":
        return argv + ["--fp16", "--fp16-init-scale", "16"]
    return argv


def command(args, argv):
    """fairseq-train's command for ``argv``; bf16 sets common.bf16 on the
    configuration as fairseq-hydra-train does (fairseq-train's --bf16 means a
    TPU in fairseq 0.12)."""
    if args.precision != "bf16":
        return ["fairseq-train", *argv]
    code = ("import sys; from fairseq_cli import train; from fairseq import options; "
            "from fairseq.dataclass.utils import convert_namespace_to_omegaconf; "
            "from fairseq.distributed import utils as d; "
            "a = options.parse_args_and_arch(options.get_training_parser(), sys.argv[1:]); "
            "c = convert_namespace_to_omegaconf(a); c.common.bf16 = True; "
            "d.call_main(c, train.main)")
    return [sys.executable, "-c", code, *argv]


def torchrun(train):
    """torchrun's command starting ``train`` (fairseq-train, or this Python
    with -c for bf16) as two ranks: an executable, hence --no-python."""
    return ["torchrun", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
            "--master_port", str(free_port()), "--no-python", *train]


def steps(log):
    """{update: fairseq's json record} of the training steps (train_inner lines)."""
    found = {}
    for line in log.splitlines():
        if "| train_inner |" in line:
            record = json.loads(line[line.index("{"):])
            found[int(record["num_updates"])] = record
    return found


def words_per_second(records):
    """The median words/s over the steps after the first quarter (warm-up)."""
    speeds = sorted(float(r["wps"]) for u, r in records.items() if u > len(records) // 4)
    return speeds[len(speeds) // 2] if speeds else float("nan")


def run(cmd, what):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    return proc.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    args = parse_args(argv)
    work = args.work_dir or tempfile.mkdtemp(prefix="two_ranks.")
    one = run(command(args, [*train_args(args, f"{work}/one"), "--update-freq", "2"]),
              "one rank with --update-freq 2")
    train = command(args, [*train_args(args, f"{work}/two"), "--distributed-backend", "gloo",
                           "--distributed-world-size", "2"])
    two = run(torchrun(train), "two ranks under torchrun")
    curve_one, curve_two = steps(one), steps(two)
    common = sorted(set(curve_one) & set(curve_two))
    if len(common) < args.updates // 2:
        sys.exit(f"error: only {len(common)} updates logged by both runs (see {work})")
    gap = max(abs(float(curve_one[u]["loss"]) - float(curve_two[u]["loss"])) for u in common)
    print(f"{args.device} {args.precision}: {len(common)} updates, largest loss gap {gap:.4f} "
          f"(tolerance {args.tolerance}); words/s: 1 rank x update-freq 2 "
          f"{words_per_second(curve_one):.0f}, 2 ranks {words_per_second(curve_two):.0f}")
    if gap > args.tolerance:
        sys.exit(1)


if __name__ == "__main__":
    main()
