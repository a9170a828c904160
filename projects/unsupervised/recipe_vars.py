"""The variables of a recipe written in Python (repair.py, offline_bt.py).

Each is read from the environment, as a shell recipe reads its variables (so
that ``VAR=value bash projects/unsupervised/repair.sh`` keeps working), or
given as an option (``--var-name value``), which wins over the environment;
an empty value counts as none (bash's ``${VAR:-default}``) unless the
variable says otherwise. ``--help`` prints the recipe's description and
every variable with its default.
"""

import argparse
import os
import re
from dataclasses import dataclass

from projects.unsupervised.commands import fail


@dataclass
class Var:
    """One variable. ``default``: a string, or a function of the values read
    before it (a dict by lower-case name) that returns one, ``shown`` saying
    what it is in --help; ``required``: the message where it is missing.
    ``count``: a whole number (``invalid`` the advice where it is not);
    ``choices``: the values it may take (``invalid`` likewise). ``empty``: an
    empty value stands (bash's ``${VAR-default}``)."""
    name: str
    default: object = ""
    help: str = ""
    required: str = ""
    count: bool = False
    choices: tuple = ()
    invalid: str = ""
    empty: bool = False
    shown: str = ""

    @property
    def dest(self):
        return self.name.lower()

    def describe(self):
        if self.required:
            text = f"required: {self.required}"
        else:
            default = self.shown or repr(self.default)
            text = f"{self.help} (default: {default})".lstrip()
        return text.replace("%", "%%")

    def convert(self, value):
        if self.count and not re.fullmatch(r"[0-9]+", value):
            fail(f"{self.name}={value}: {self.invalid or 'give a whole number'}")
        if self.choices and value not in self.choices:
            fail(f"{self.name}={value}: {self.invalid}")
        return int(value) if self.count else value


# the variables of both recipes: the raw test text and its languages
TEST_AND_LANGUAGES = [
    Var("REFERENCE_PREFIX", required="set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the "
        "raw test text"),
    Var("L1", "en"),
    Var("L2", "fr"),
]


def parser(variables, description, prog):
    """An ArgumentParser with an option per variable, its --help the
    recipe's ``description`` and every variable with its default."""
    result = argparse.ArgumentParser(
        prog=prog, usage="[VAR=value ...] %(prog)s [--var-name value ...]",
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Each variable is read from the environment (VAR=value), or given as its "
        "option, which wins (a value that starts with -, as MODEL_ARGS's, after =: "
        "--model-args='--arch ...'); NUM_GPUS and USER_DIR (as mass_tools/shell/common.sh "
        "reads them) from the environment alone.")
    group = result.add_argument_group("variables (VAR=value, or --var-name value)")
    for var in variables:
        group.add_argument("--" + var.dest.replace("_", "-"), dest=var.dest, metavar=var.name,
                            default=None, help=var.describe())
    return result


def read(variables, description, prog, argv=None, environ=None):
    """The variables' values, by lower-case name, from the options in
    ``argv``, else ``environ`` (the environment), else their defaults; stops
    with ``error: ...`` where a required one is missing or one is invalid."""
    args = parser(variables, description, prog).parse_args(argv)
    environ = os.environ if environ is None else environ
    values = {}
    for var in variables:
        value = getattr(args, var.dest)
        if value is None:
            value = environ.get(var.name)
        if value is None or (value == "" and not var.empty):
            if var.required:
                fail(f"{var.name}: {var.required}")
            value = var.default(values) if callable(var.default) else var.default
        values[var.dest] = var.convert(str(value))
    return argparse.Namespace(**values)
