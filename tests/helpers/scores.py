"""sacreBLEU's scores of output files, recomputed by a test to check the
numbers a recipe or study wrote into its tables."""

import sacrebleu
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest


def text_lines(path):
    """The lines of a file as sacreBLEU's command reads them."""
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip() for line in f]


def bleu_chrf(hypotheses, reference):
    """sacreBLEU's BLEU and chrF of the file ``hypotheses`` against the file
    ``reference``, as the 2-decimal strings the recipes write."""
    hyps, refs = text_lines(hypotheses), [text_lines(reference)]
    return (f"{sacrebleu.corpus_bleu(hyps, refs).score:.2f}",
            f"{sacrebleu.corpus_chrf(hyps, refs).score:.2f}")


def paired_p(reference, baseline, system):
    """The p-value of sacreBLEU's paired bootstrap of BLEU (1,000 resamples,
    its fixed seed) of the file ``system`` against the file ``baseline``."""
    _, results = PairedTest([("baseline", text_lines(baseline)), ("system", text_lines(system))],
                            {"BLEU": BLEU()}, [text_lines(reference)], test_type="bs")()
    return results["BLEU"][1].p_value
