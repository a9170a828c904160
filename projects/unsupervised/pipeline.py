"""The repair recipe's system as a whole (projects.unsupervised.repair): text
translated word by word, repaired by a round's model, the placeholders
restored."""

from pathlib import Path

from projects.unsupervised import restore_placeholders
from projects.unsupervised.commands import call
from projects.unsupervised.repair_model import repair
from projects.unsupervised.repair_text import PLACEHOLDER, other, plain_words, words


def translate(s, round_, src, text, out, name):
    """``out``: the file ``text`` (in ``src``) translated by the pipeline of
    round ``round_``: word by word (round 0), or word by word with
    placeholders, repaired by the round's model (NBEST hypotheses, beam
    SCORE_BEAM) and the placeholders restored, a line that lost one falling
    back to word by word. The word-by-word files are kept as
    WORK_DIR/{words,plain}.NAME.SRC; returns the restoration's log."""
    w = s.work
    masked, plain = w / f"words.{name}.{src}", w / f"plain.{name}.{src}"
    if not masked.is_file():
        words(s, src, text, masked)
    if not plain.is_file():
        plain_words(s, src, text, plain)
    log = Path(f"{out}.restore.log")
    if round_ == 0:
        out.write_bytes(plain.read_bytes())
    else:
        repair(s, w / f"round{round_}/ckpt/checkpoint_last.pt", other(s, src), masked,
               f"{out}.nbest", s.nbest, s.score_beam)
        call(restore_placeholders.main, "--input", f"{out}.nbest", "--nbest", s.nbest,
             "--masked", f"{masked}.masked", "--placeholder", PLACEHOLDER, "--fallback", plain,
             "--output", out, stderr=log)
    return log
