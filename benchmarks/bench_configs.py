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


def denoising(work, ratio, arch="bart_base", poisson_lambda=3.5):
    """fairseq's denoising (BART's text infilling); docs/pretraining.md's
    settings are ratio 0.3 and lambda 3 (STUDY_DENOISING)."""
    return ["--task", "denoising", f"{work}/mono-bin", "--arch", arch,
            "--criterion", "cross_entropy", "--mask", ratio, "--mask-random", "0.1",
            "--mask-length", "span-poisson", "--poisson-lambda", poisson_lambda,
            "--replace-length", "1", "--permute-sentences", "0", "--rotate", "0",
            "--insert", "0", "--sample-break-mode", "eos", "--tokens-per-sample", "1024"]


# the denoising of docs/pretraining.md and of the study of projects/paper_analysis
STUDY_DENOISING = dict(ratio=0.3, poisson_lambda=3)
# every fast path of transformer_mass (with --memory-efficient-fp16, or
# memory-efficient bf16, for torch_adam's fp32 master weights)
FAST_PATHS = ["--attention", "sdpa", "--compile-layers", "--optimizer", "torch_adam"]


def masked_s2s(work, ratio):
    return ["--task", "masked_s2s", f"{work}/mono-bin", "--arch", "transformer_mass",
            "--criterion", "masked_s2s_loss", "--mask-ratio", ratio]


def copy_translation(work, arch="transformer"):
    return ["--task", "translation", f"{work}/copy-bin", "-s", "src", "-t", "tgt",
            "--arch", arch, "--criterion", "cross_entropy"]
