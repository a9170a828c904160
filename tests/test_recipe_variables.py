"""Every variable a recipe reads (a ``VAR=${VAR:-default}`` line of a script
of examples/, examples/paper/ or data-prep/) is in its script's table, in
examples/README.md or data-prep/README.md, with the script's default: a
table that forgets a variable, names one the script lacks, or gives another
default fails here. The tables are read from the pages, the defaults from
the scripts; no process is started."""

import re

import pytest

from conftest import REPO

# (the page, the folder its tables name scripts from, the scripts it documents)
EXAMPLES = REPO / "examples"
PAGES = [(EXAMPLES / "README.md", EXAMPLES,
          sorted(EXAMPLES.glob("*.sh")) + sorted((EXAMPLES / "paper").glob("*.sh"))),
         (REPO / "data-prep" / "README.md", REPO / "data-prep",
          sorted((REPO / "data-prep").glob("*.sh")))]
# VAR=${VAR:-default}, VAR=${VAR-default} (empty allowed) or VAR=${VAR:?message}
ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Z][A-Z0-9_]*)=\$\{\1(:-|:\?|-)", re.M)
BY_SCALE = re.compile(r'^\$\(by_scale ("[^"]*"|\S+) ("[^"]*"|\S+) ("[^"]*"|\S+)\)$')
CODE = re.compile(r"`([^`]*)`")
PIPE = re.compile(r"(?<!\\)\|")  # a cell boundary: a | not written as \|


def braced_end(text, start):
    """The index of the ``}`` that closes the ``${`` whose body starts at ``start``."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unclosed ${{ at {start}")


def shown(default):
    """A default as the tables write it: line continuations and runs of
    spaces as one space, outer double quotes dropped, a ``$(by_scale P S T)``
    as ``P / S / T`` (the values for SCALE=paper, small and tiny)."""
    default = " ".join(default.replace("\\\n", " ").split())
    if len(default) > 1 and default[0] == default[-1] == '"':
        default = default[1:-1].strip()
    scaled = BY_SCALE.match(default)
    if scaled:
        default = " / ".join(value.strip('"') for value in scaled.groups())
    return default


def script_variables(path):
    """{VAR: 'required' | 'empty' | its default as shown}, in the script's order."""
    text = path.read_text(encoding="utf-8")
    found = {}
    for match in ASSIGNMENT.finditer(text):
        body = text[match.end():braced_end(text, match.end())]
        if match.group(2) == ":?":
            found[match.group(1)] = "required"
        else:
            found[match.group(1)] = shown(body) or "empty"
    return found


def page_tables(page):
    """{heading text: {VAR: its default cell}} for each table that follows a
    heading (### `SCRIPT`) with a `variable` column."""
    tables, heading, rows = {}, None, None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            heading, rows = line.lstrip("#").strip(), None
        elif line.startswith("|") and heading is not None:
            cells = [cell.strip() for cell in PIPE.split(line.strip().strip("|"))]
            if rows is None:
                if cells[0] != "variable":
                    heading = None
                    continue
                rows = tables.setdefault(heading, {})
            elif not set(cells[0]) <= set("-: "):
                rows[cells[0].strip("`")] = cells[1]
    return tables


def cell_default(cell):
    """What a default cell says: 'required', 'empty', or its first code span."""
    if cell.startswith(("required", "empty")):
        return cell.split()[0].strip(",;:")
    code = CODE.search(cell)
    return code.group(1) if code else cell


def table_problems(script, table):
    """A line per variable missing from ``table``, per row the script lacks, per
    default that differs."""
    variables = script_variables(script)
    problems = [f"{script.name}: {name} (default {default!r}) is not in its table"
                for name, default in variables.items() if name not in table]
    problems += [f"{script.name}: the table lists {name}, which the script does not set"
                 for name in table if name not in variables]
    problems += [f"{script.name}: {name}: the table says {cell_default(table[name])!r}, "
                 f"the script {variables[name]!r}"
                 for name in variables if name in table
                 and cell_default(table[name]) != variables[name]]
    return problems


@pytest.mark.parametrize("page,folder,scripts", PAGES, ids=["examples", "data-prep"])
def test_every_recipe_variable_is_in_its_table_with_the_scripts_default(page, folder, scripts):
    tables = page_tables(page)
    problems = []
    for script in scripts:
        if not script_variables(script):
            continue  # sourced helpers that set no variable of their own
        name = f"`{script.relative_to(folder)}`"
        if name not in tables:
            problems.append(f"{page.relative_to(REPO)}: no '### {name}' variable table")
        else:
            problems += table_problems(script, tables[name])
    assert not problems, "\n".join(problems)


def test_the_check_reads_defaults_as_the_shell_does(tmp_path):
    """A planted script and table: a forgotten variable, an extra row and a
    changed default are each reported; quoting, continuation lines,
    by_scale and nested expansions are read as written."""
    script = tmp_path / "demo.sh"
    script.write_text(
        'DATA=${DATA:?set DATA}\nOUT=${OUT:-${DATA%.bin}.out}\nEXTRA=${EXTRA:-}\n'
        'MODEL=${MODEL:-"--layers 2 \\\n    --dim 8"}\nLR=${LR:-$(by_scale 0.0001 0.001 0.01)}\n'
        'INIT=${INIT-ckpt.pt}   # empty: none\nN=${N:-5}\n')
    assert script_variables(script) == {
        "DATA": "required", "OUT": "${DATA%.bin}.out", "EXTRA": "empty",
        "MODEL": "--layers 2 --dim 8", "LR": "0.0001 / 0.001 / 0.01", "INIT": "ckpt.pt",
        "N": "5"}
    page = tmp_path / "README.md"
    page.write_text(
        "### `demo.sh`\n\n| variable | default | what |\n| --- | --- | --- |\n"
        "| `DATA` | required | in |\n| `OUT` | `${DATA%.bin}.out` | out |\n"
        "| `EXTRA` | empty | more |\n| `MODEL` | `--layers 2 --dim 8` | sizes |\n"
        "| `LR` | `0.0001 / 0.001 / 0.01` | lr |\n| `INIT` | `ckpt.pt` (empty: none) | start |\n"
        "| `N` | `6` | n |\n| `GONE` | `1` | old |\n")
    table = page_tables(page)["`demo.sh`"]
    assert table_problems(script, table) == [
        "demo.sh: the table lists GONE, which the script does not set",
        "demo.sh: N: the table says '6', the script '5'"]
    del table["DATA"]
    assert "demo.sh: DATA (default 'required') is not in its table" in table_problems(script, table)
