"""The shell blocks of a page, as a reader copies them: what the walkthrough
tests (test_readme_walkthrough.py, test_your_data_guide.py) run."""

import re

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.M | re.S)
HEADING = re.compile(r"^(#+)\s+(.*?)\s*$", re.M)


def bash_blocks(text, heading=None):
    """The ```bash blocks of ``text`` in order, each a list of commands
    (continuation lines joined, comment lines dropped); with ``heading``
    (a function of a heading's text), only the blocks of the sections whose
    heading it accepts."""
    fences = [match.span() for match in FENCE.finditer(text)]
    sections = []  # (start offset, accepted), for headings outside the fences
    for match in HEADING.finditer(text):
        if not any(start <= match.start() < end for start, end in fences):
            sections.append((match.start(), heading is None or heading(match.group(2))))
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1).strip() != "bash":
            continue
        accepted = heading is None
        for start, ok in sections:
            if start < match.start():
                accepted = ok
        if accepted:
            lines = match.group(2).replace("\\\n", " ").splitlines()
            blocks.append([" ".join(line.split()) for line in lines
                           if line.strip() and not line.lstrip().startswith("#")])
    return blocks


def with_options(command, program, options):
    """``command`` with ``options`` added after the arguments of ``program``
    (before a redirection), where ``command`` runs ``program``: options
    given last win in argparse, so they shrink a run without editing it."""
    words = command.split(" ")
    if not words or words[0] != program:
        return command
    for i, word in enumerate(words):
        if word in (">", "|", ">>", "2>&1", "&&"):
            return " ".join(words[:i] + list(options) + words[i:])
    return " ".join(words + list(options))
