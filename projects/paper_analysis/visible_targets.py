"""How much of what each pre-training objective asks the decoder to predict
is visible in the encoder's input? No training: the objectives' own
datasets, built by their tasks over held-out monolingual text.

    python -m projects.paper_analysis.visible_targets work/denoising-gap/s1/mono-bin

For each objective, over the sentences of ``valid.LANG`` for each language
of ``--langs``: the share of the decoder's target tokens (padding aside)
that the encoder input holds too, counted as a multiset intersection of
the two token sequences without ``<mask>``, so that a token is credited as
many times as it appears on both sides. Denoising's target is the whole
sentence and most of its input is the sentence itself; MASS's target is the
masked span, whose tokens reach the encoder only when left unchanged (or
drawn as a random replacement).
"""

import argparse
from collections import Counter

from projects.paper_analysis.pretrain import DENOISING, MASS
from projects.quiet_logs import quiet_logs

OBJECTIVES = {
    "mass_r0.50": MASS + ["--mask-ratio", "0.5"],
    "mass_r1.00": MASS + ["--mask-ratio", "1"],
    "whole_r0.50": MASS + ["--mask-ratio", "0.5", "--reconstruct-sentence"],
    "dae": DENOISING,
}


def build_task(data, options, seed):
    """The task of ``options`` over ``data``, as fairseq-train builds it."""
    from fairseq import options as fairseq_options
    from fairseq import tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    import mass_plugin

    argv = [str(data), "--user-dir", mass_plugin.__path__[0], "--arch", "transformer_mass",
            "--seed", str(seed), *options]
    cfg = convert_namespace_to_omegaconf(
        fairseq_options.parse_args_and_arch(fairseq_options.get_training_parser(), argv))
    utils.import_user_module(cfg.common)
    return tasks.setup_task(cfg.task)


def visible_share(task, split):
    """Target tokens found in the encoder input, over all of ``split``."""
    task.load_dataset(split)
    dataset = task.dataset(split)
    pad, mask = task.source_dictionary.pad(), task.source_dictionary.index("<mask>")
    found = total = 0
    for i in range(len(dataset)):
        item = dataset[i]
        target = [t for t in item["target"].tolist() if t != pad]
        source = Counter(t for t in item["source"].tolist() if t != mask)
        found += sum((Counter(target) & source).values())
        total += len(target)
    return found / total, total / len(dataset)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="monolingual data-bin: dict.txt and valid.LANG")
    parser.add_argument("--langs", default="en,fr")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    quiet_logs()
    print("objective    target tokens visible in the encoder input   targets a sentence")
    for name, options in OBJECTIVES.items():
        task = build_task(args.data, options, args.seed)
        quiet_logs()
        shares = [visible_share(task, f"valid.{lang}") for lang in args.langs.split(",")]
        share = sum(s for s, _ in shares) / len(shares)
        length = sum(n for _, n in shares) / len(shares)
        print(f"{name:12s} {share:9.1%} {length:40.1f}")


if __name__ == "__main__":
    main()
