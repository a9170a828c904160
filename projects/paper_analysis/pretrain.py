"""The pre-training of each kind of point of projects/paper_analysis/__main__.py: MASS and
its ablations, fairseq's denoising auto-encoder, and the masked-LM encoder
joined with the language-model decoder."""

from projects.paper_analysis.bert_lm import join_bert_lm

MASS = ["--task", "masked_s2s", "--criterion", "masked_s2s_loss"]
# the original MASS code's four choices (docs/pretraining.md): the decoder kept
# from the encoder's [MASK] states, spans favouring the sentence's ends, XLM's
# embeddings, noise in the decoder's input
ORIGINAL = ["--hide-mask-states", "encoder", "--span-start", "mass",
            "--embedding-style", "xlm", "--decoder-mask-prob", "0.1",
            "--decoder-random-token-prob", "0.1"]
# BART's text infilling: spans of Poisson(3) length, 30% of the tokens
DENOISING = ["--task", "denoising", "--criterion", "cross_entropy",
             "--sample-break-mode", "eos", "--tokens-per-sample", "1024",
             "--mask", "0.3", "--mask-random", "0.1", "--mask-length", "span-poisson",
             "--poisson-lambda", "3", "--replace-length", "1",
             "--permute-sentences", "0", "--rotate", "0"]
# BERT's masked LM (15% of the tokens, 80/10/10), for the encoder
MASKED_LM = ["--task", "masked_s2s", "--criterion", "encoder_mlm_loss",
             "--mask-mode", "discrete", "--mask-ratio", "0.15"]
# a language model, for the decoder: every token masked, so the encoder sees
# nothing of the sentence
LANGUAGE_MODEL = MASS + ["--mask-ratio", "1", "--random-token-prob", "0",
                         "--leave-unmasked-prob", "0"]


def pretrain_point(runner, point, pdir):
    """Pre-train ``point`` in ``pdir``; the checkpoint to fine-tune from, or
    None for random initialisation (the ``none`` baseline)."""
    if point.kind in ("mass", "discrete", "feed", "whole", "original"):
        extra = MASS + ["--mask-ratio", str(point.ratio)]
        extra += {"discrete": ["--mask-mode", "discrete"], "feed": ["--feed-unmasked"],
                  "whole": ["--reconstruct-sentence"], "original": ORIGINAL,
                  }.get(point.kind, [])
        runner.pretrain(pdir / "pretrain", pdir / "pretrain.log", extra,
                        f"{point.name}: MASS pre-training")
        return pdir / "pretrain" / "checkpoint_last.pt"
    if point.kind == "dae":
        runner.pretrain(pdir / "pretrain", pdir / "pretrain.log", DENOISING,
                        f"{point.name}: denoising pre-training")
        return pdir / "pretrain" / "checkpoint_last.pt"
    if point.kind == "bert_lm":
        return pretrain_bert_lm(runner, point, pdir)
    return None


def pretrain_bert_lm(runner, point, pdir):
    """The encoder as a masked LM and the decoder as a language model, each
    with the budget of one MASS run, then one checkpoint of the two."""
    runner.pretrain(pdir / "encoder", pdir / "encoder.log", MASKED_LM,
                    f"{point.name}: masked-LM pre-training of the encoder")
    runner.pretrain(pdir / "decoder", pdir / "decoder.log", LANGUAGE_MODEL,
                    f"{point.name}: language-model pre-training of the decoder")
    joined = pdir / "joined.pt"
    if not joined.exists():
        join_bert_lm(pdir / "encoder" / "checkpoint_last.pt",
                     pdir / "decoder" / "checkpoint_last.pt", joined, runner.args.seed)
    return joined
