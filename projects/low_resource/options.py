"""The low-resource curve's command line (python -m projects.low_resource.curve):
its options, the presets they start from, and the runs they ask for. What
makes two runs comparable (SIGNATURE) is kept with them, since a work
directory holds one configuration of these options."""

import argparse
import re
from dataclasses import dataclass

PRESETS = {
    # a 2+2-layer, 128-dimension model: minutes per run on 2 CPU cores; the
    # pre-training measured in docs/results.md section 8 (recipe search 4):
    # the whole sentence masked (k = m), 9,000 updates, led the paper's 50%
    # span after 18,000 at every point of the curve
    "cpu": dict(layers=2, dim=128, ffn=512, heads=4, vocab_size=4000, max_tokens=2048,
                mask_ratio=1.0, pretrain_updates=9000, pretrain_lr=0.001,
                pretrain_warmup=300, finetune_updates=1000, lr=0.001, warmup=100,
                dropout=0.1, validate_every=100, patience=3),
    # the paper's base Transformer and its 50% span on one GPU (not measured
    # here: k = m won with a 2+2-layer model, the paper's 50% with 6+6)
    "gpu": dict(layers=6, dim=512, ffn=2048, heads=8, vocab_size=32000, max_tokens=8192,
                mask_ratio=0.5, pretrain_updates=50000, pretrain_lr=0.0005,
                pretrain_warmup=4000, finetune_updates=5000, lr=0.0005, warmup=1000,
                dropout=0.1, validate_every=250, patience=10),
}
# which validation checkpoint_best.pt (and early stopping) follows: BLEU of
# greedy decoding of the valid set, or the label-smoothed loss
SELECT_BY = {
    "bleu": ["--eval-bleu", "--eval-bleu-args", '{"beam":1,"max_len_a":1.5,"max_len_b":10}',
             "--eval-bleu-remove-bpe", "sentencepiece", "--best-checkpoint-metric", "bleu",
             "--maximize-best-checkpoint-metric"],
    "loss": [],
}
# what makes two runs comparable: a work dir keeps one of each
SIGNATURE = ("layers", "dim", "ffn", "heads", "vocab_size", "max_tokens",
             "pretrain_updates", "pretrain_lr", "pretrain_warmup", "mask_ratio",
             "finetune_updates", "lr", "warmup", "dropout", "validate_every", "patience",
             "beam", "langs", "mono", "para_dir", "valid_lines", "select_by",
             "embedding_style")
# what a work dir made before a setting existed holds
LEGACY = {"embedding_style": "fairseq"}


@dataclass(frozen=True)
class Run:
    n_pairs: int
    init: str  # random | mass_NAME
    seed: int
    direction: str  # SRC-TGT

    @property
    def name(self):
        return f"n{self.n_pairs}-{self.init}-seed{self.seed}-{self.direction}"


def named_paths(parser, flag, values):
    """NAME=PATH options as a dict, or the parser's error naming the flag."""
    paths = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or not re.fullmatch(r"[a-z0-9_]+", name) or not path:
            parser.error(f"{flag} {value!r}: expected NAME=PATH with NAME in [a-z0-9_]")
        if name in paths:
            parser.error(f"{flag}: {name} given twice")
        paths[name] = path
    return paths


def build_parser(description=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--para-dir", required=True,
                        help="train/valid/test.LANG pairs (the first N train pairs are used)")
    parser.add_argument("--mono", action="append", metavar="NAME=DIR",
                        help="a monolingual corpus (DIR/LANG.txt per language); its MASS "
                        "initialisation is called mass_NAME; repeat for more")
    parser.add_argument("--init-from", action="append", metavar="NAME=CHECKPOINT",
                        help="an initialisation mass_NAME from a checkpoint pre-trained "
                        "outside the curve (its dictionary must be WORK_DIR/bin/dict.txt, "
                        "e.g. pre-trained on WORK_DIR/bin/CORPUS); repeat for more")
    parser.add_argument("--extra-test", action="append", default=[], metavar="NAME=PREFIX",
                        help="also score every run on PREFIX.SRC -> PREFIX.TGT (raw text)")
    parser.add_argument("--work-dir", default="work/low-resource-curve")
    parser.add_argument("--langs", default="en,fr", help="the two languages")
    parser.add_argument("--sizes", default="1000,3000,10000", help="numbers of pairs N")
    parser.add_argument("--seeds", default="1,2", help="fine-tuning seeds")
    parser.add_argument("--max-seeded-size", type=int, default=3000,
                        help="sizes above this run with the first seed only")
    parser.add_argument("--directions", default=None,
                        help="comma-separated SRC-TGT (default: both ways)")
    parser.add_argument("--inits", default=None,
                        help="a subset of random,mass_NAME... to run (default: all)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu",
                        help="model size and budgets; the options below override it")
    for name, kind in (("layers", int), ("dim", int), ("ffn", int), ("heads", int),
                       ("vocab-size", int), ("max-tokens", int), ("pretrain-updates", int),
                       ("pretrain-lr", float), ("pretrain-warmup", int),
                       ("finetune-updates", int), ("lr", float), ("warmup", int),
                       ("dropout", float), ("validate-every", int), ("patience", int)):
        parser.add_argument(f"--{name}", type=kind, default=None)
    parser.add_argument("--mask-ratio", type=float, default=None,
                        help="share of each sentence masked in pre-training (cpu preset: "
                        "1.0, the whole sentence; gpu preset: 0.5, the paper's)")
    parser.add_argument("--embedding-style", choices=("fairseq", "xlm"), default="xlm",
                        help="transformer_mass's --embedding-style for the pre-trainings and "
                        "the fine-tunings from random initialisation (from a checkpoint, "
                        "its style). Default xlm, the plugin's; fairseq reruns the tables "
                        "made before xlm became the default")
    parser.add_argument("--valid-lines", type=int, default=1000,
                        help="lines of each monolingual corpus held out for validation")
    parser.add_argument("--select-by", choices=sorted(SELECT_BY), default="bleu",
                        help="the fine-tuning checkpoint kept, and early stopping: by the "
                        "BLEU of greedy decoding of the valid set (default), or by valid loss")
    parser.add_argument("--beam", type=int, default=5, help="beam of the test translation")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs trained at the same time, each with its share of the "
                        "CPU threads (e.g. 2 on 2 cores, one thread each; keep 1 on "
                        "one GPU)")
    parser.add_argument("--plot-only", action="store_true",
                        help="only rewrite the CSV files and the plot")
    parser.add_argument("--pretrain-only", action="store_true",
                        help="only the sentencepiece model, the dictionary and the MASS "
                        "pre-trainings (pretrain/NAME/checkpoint_best.pt), e.g. to start "
                        "unsupervised training from them: no parallel text is read")
    return parser


def int_list(parser, flag, text):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        parser.error(f"{flag} must be comma-separated integers, got {text!r}")
    if not values or min(values) <= 0:
        parser.error(f"{flag} needs positive integers, got {text!r}")
    return values


def parse_args(argv=None, description=None):
    parser = build_parser(description)
    args = parser.parse_args(argv)
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.mono = named_paths(parser, "--mono", args.mono)
    args.extra_tests = named_paths(parser, "--extra-test", args.extra_test)
    args.init_from = named_paths(parser, "--init-from", args.init_from)
    both = sorted(set(args.mono) & set(args.init_from))
    if both:
        parser.error(f"--init-from and --mono both name {', '.join(both)}")
    args.langs = [lang for lang in args.langs.split(",") if lang]
    if len(args.langs) != 2:
        parser.error(f"--langs needs two languages, got {args.langs}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    args.sizes = int_list(parser, "--sizes", args.sizes)
    args.seeds = int_list(parser, "--seeds", args.seeds)
    a, b = args.langs
    args.directions = (args.directions or f"{a}-{b},{b}-{a}").split(",")
    for direction in args.directions:
        if sorted(direction.split("-")) != sorted(args.langs):
            parser.error(f"--directions: {direction} is not {a}-{b} or {b}-{a}")
    known = ["random"] + [f"mass_{name}" for name in [*args.mono, *args.init_from]]
    args.inits = args.inits.split(",") if args.inits else known
    if set(args.inits) - set(known):
        parser.error(f"--inits: unknown {sorted(set(args.inits) - set(known))} (known: "
                     f"{', '.join(known)}; each --mono NAME gives mass_NAME)")
    return args


def runs_of(args):
    """Seed by seed, so that a partial curve is already a whole one."""
    return [Run(n, init, seed, direction)
            for i, seed in enumerate(args.seeds)
            for n in args.sizes if i == 0 or n <= args.max_seeded_size
            for direction in args.directions for init in args.inits]
