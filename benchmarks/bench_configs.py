"""The configurations benchmark.py measures: model dimensions and the
fairseq task options of each task compared."""

# model dimensions: the CPU tables' model, the pretrain_base preset's
# (transformer_mass_base: GELU, dropout 0.1 everywhere), --quick's and the
# paper's (benchmarks/estimate_cost.py)
DIMS = {
    "d512": dict(layers=6, dim=512, ffn=2048, heads=8, activation="relu", dropouts=(0.1, 0, 0)),
    "base": dict(layers=6, dim=768, ffn=3072, heads=12, activation="gelu",
                 dropouts=(0.1, 0.1, 0.1)),
    "quick": dict(layers=2, dim=64, ffn=256, heads=4, activation="relu", dropouts=(0.1, 0, 0)),
    # the MASS paper's model (examples/paper/, SCALE=paper)
    "paper": dict(layers=6, dim=1024, ffn=4096, heads=8, activation="gelu",
                  dropouts=(0.1, 0.1, 0)),
}


def describe(args, dims):
    dims = DIMS["quick" if args.quick else dims]
    return f"{dims['layers']}+{dims['layers']} layers, {dims['dim']} dims"


def model_args(args, dims="d512"):
    dims = DIMS["quick" if args.quick else dims]
    out = []
    for side in ("encoder", "decoder"):
        out += [f"--{side}-layers", dims["layers"], f"--{side}-embed-dim", dims["dim"],
                f"--{side}-ffn-embed-dim", dims["ffn"], f"--{side}-attention-heads",
                dims["heads"], f"--{side}-learned-pos"]
    dropout, attention, activation = dims["dropouts"]
    return out + ["--share-all-embeddings", "--dropout", dropout, "--attention-dropout",
                  attention, "--activation-dropout", activation,
                  "--activation-fn", dims["activation"],
                  "--max-source-positions", "1024", "--max-target-positions", "1024"]


def denoising(work, ratio):
    return ["--task", "denoising", f"{work}/mono-bin", "--arch", "bart_base",
            "--criterion", "cross_entropy", "--mask", ratio, "--mask-random", "0.1",
            "--mask-length", "span-poisson", "--poisson-lambda", "3.5",
            "--replace-length", "1", "--permute-sentences", "0", "--rotate", "0",
            "--insert", "0", "--sample-break-mode", "eos", "--tokens-per-sample", "1024"]


def masked_s2s(work, ratio):
    return ["--task", "masked_s2s", f"{work}/mono-bin", "--arch", "transformer_mass",
            "--criterion", "masked_s2s_loss", "--mask-ratio", ratio]


def copy_translation(work, arch="transformer"):
    return ["--task", "translation", f"{work}/copy-bin", "-s", "src", "-t", "tgt",
            "--arch", arch, "--criterion", "cross_entropy"]
