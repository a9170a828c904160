"""docs/results.md's summary is the one place a headline figure is written
beside its raw output. Every number of a summary row's number cell appears,
to the precision written, in a file that the row's raw-output cell links (a
row without a linked file says "not committed"), so a derived figure (mean,
ratio, gain, p-value) counts only where the row's command wrote it. Every
number of README.md's results table appears in the summary."""

import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

from conftest import REPO

RESULTS = REPO / "docs" / "results.md"
README = REPO / "README.md"
# a number as the pages write it: 12.25, 11,523, +3.90, 1.36x, 19.2%; not a
# part of a word or name (fp16, H200, e26d0b3, run6) nor of a longer number
NUMBER = re.compile(r"(?<![\w.,])[-+]?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w.]*\d)"
                    r"(?![A-Za-wyz])")
RAW_NUMBER = re.compile(r"\d+(?:\.\d+)?")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
CODE = re.compile(r"`[^`]*`")
BINARY = (".tgz", ".gz", ".png", ".pt")
# the tables outside the summary that repeat its figures: (page, heading)
TABLES = [(README, "## Results"),
          (REPO / "docs" / "pretraining.md", "## MASS or denoising?")]


def table_rows(text, heading):
    """The cells of each body row of the first table under ``heading``."""
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert len(rows) > 2, f"no table under {heading!r}"
    return rows[0], rows[2:]  # the header, then the body (after the --- line)


def prose(cell):
    """A cell without its code spans and link targets (a link keeps its text)."""
    return LINK.sub(r"\1", CODE.sub(" ", cell))


def numbers(cell):
    """The numbers written in ``cell``, as unsigned Decimals."""
    return [Decimal(whole.replace(",", "") + (f".{frac}" if frac else ""))
            for whole, frac in NUMBER.findall(prose(cell))]


def raw_numbers(text):
    """Every number in a raw output, each rounded to every precision it
    allows: {decimals: {value, ...}}."""
    found = set(RAW_NUMBER.findall(text))
    found |= set(RAW_NUMBER.findall(re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)))
    rounded = {}
    for written in found:
        value = Decimal(written)
        decimals = len(written.partition(".")[2])
        for places in range(min(decimals, 6) + 1):
            unit = Decimal(1).scaleb(-places)
            for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN):
                rounded.setdefault(places, set()).add(value.quantize(unit, rounding=mode))
    return rounded


def appears(number, rounded):
    places = -number.as_tuple().exponent
    return number in rounded.get(places, ())


def raw_files(cell, page):
    """The files a raw-output cell links, relative to ``page``."""
    return [(page.parent / target.split("#")[0]).resolve()
            for _, target in LINK.findall(cell) if not target.startswith("http")]


def summary_problems(results=RESULTS):
    """A line per number of the summary's number cells that none of its
    row's raw outputs holds, per missing raw file, per row without a file
    that does not say "not committed"."""
    header, rows = table_rows(results.read_text(encoding="utf-8"), "## Summary")
    number_at, raw_at = header.index("number"), header.index("raw output")
    problems = []
    for row in rows:
        claim, cell, raw = row[0], row[number_at], row[raw_at]
        files = raw_files(raw, results)
        if not files:
            if "not committed" not in raw:
                problems.append(f"{claim}: no raw output linked, and it does not say "
                                "'not committed'")
            continue
        texts = []
        for path in files:
            if not path.exists():
                problems.append(f"{claim}: {path} is linked but missing")
            elif not path.name.endswith(BINARY):
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
        rounded = raw_numbers("\n".join(texts))
        problems += [f"{claim}: {number} is in none of its raw outputs "
                     f"({', '.join(p.name for p in files)})"
                     for number in numbers(cell) if not appears(number, rounded)]
    return problems


def repeated_problems(page, heading, results=RESULTS, links=True):
    """A line per number of ``page``'s table under ``heading`` missing from
    the summary, and (``links``) per row of it without a link."""
    _, summary = table_rows(results.read_text(encoding="utf-8"), "## Summary")
    known = {n for row in summary for cell in row for n in numbers(cell)}
    _, rows = table_rows(page.read_text(encoding="utf-8"), heading)
    problems = []
    for row in rows:
        if links and not LINK.search(" ".join(row)):
            problems.append(f"{row[0]}: no link to the row's results")
        problems += [f"{row[0]}: {n} is not in docs/results.md's summary"
                     for cell in row for n in numbers(cell) if n not in known]
    return problems


def test_every_summary_number_is_in_its_rows_raw_output():
    problems = summary_problems()
    assert not problems, "\n".join(problems)


def test_every_readme_results_number_is_in_the_summary():
    problems = repeated_problems(README, "## Results")
    assert not problems, "\n".join(problems)


def test_the_other_tables_repeat_only_summary_figures():
    problems = [f"{page.name}: {line}" for page, heading in TABLES[1:]
                for line in repeated_problems(page, heading, links=False)]
    assert not problems, "\n".join(problems)


def test_the_checks_catch_a_planted_mismatch(tmp_path):
    """The two checks on a page of their own: a figure off by one in the last
    digit, a ratio written but not printed, and a README number that the
    summary lacks are each reported; rounding to the precision written is not."""
    (tmp_path / "docs" / "raw").mkdir(parents=True)
    (tmp_path / "docs" / "raw" / "run.log").write_text(
        "BLEU = 15.87 ...\nbaseline 13.18\n11522.9 sentences/s\np = 0.0010\n")
    results = tmp_path / "docs" / "results.md"
    row = "| quickstart | {} | `cmd 1` | - | [run.log](raw/run.log) |\n"
    page = ("# R\n\n## Summary\n\n| claim | number | command | link | raw output |\n"
            "| --- | --- | --- | --- | --- |\n" + row + "| old | 9.99 | - | - | not committed |\n")
    results.write_text(page.format("15.87 against 13.18 (p = 0.001), 11,523 sentences/s"))
    assert summary_problems(results) == []
    results.write_text(page.format("15.88 against 13.18, 1.20x"))
    assert summary_problems(results) == [
        "quickstart: 15.88 is in none of its raw outputs (run.log)",
        "quickstart: 1.20 is in none of its raw outputs (run.log)"]
    results.write_text(page.format("15.87 against 13.18 (p = 0.001), 11,523 sentences/s"))
    readme = tmp_path / "README.md"
    readme.write_text("## Results\n\n| claim | number |\n| --- | --- |\n"
                      "| [quickstart](docs/results.md) | 15.88 against 13.18 |\n| bare | 9.99 |\n")
    assert repeated_problems(readme, "## Results", results) == [
        "[quickstart](docs/results.md): 15.88 is not in docs/results.md's summary",
        "bare: no link to the row's results"]


def test_numbers_are_read_as_written():
    cell = ("15.87 / 42.58 (p = 0.001), +3.90, 1.36x, 19.2% in fp16 on one H200, "
            "11,523 against 8,491; `--mask-ratio 1` [run 6](gpu-run6/x.log)")
    assert [str(n) for n in numbers(cell)] == [
        "15.87", "42.58", "0.001", "3.90", "1.36", "19.2", "11523", "8491", "6"]
    rounded = raw_numbers("11522.9 and 0.0010, 6.64,28.0")
    assert appears(Decimal("11523"), rounded) and appears(Decimal("0.001"), rounded)
    assert appears(Decimal("28.0"), rounded) and not appears(Decimal("6.65"), rounded)
    assert not appears(Decimal("11522.90"), rounded)  # more digits than written
