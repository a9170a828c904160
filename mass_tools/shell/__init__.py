"""The shell helpers of the recipes (examples/*.sh, projects/*/*.sh), installed
with the tools so that a recipe anywhere can source them:

    SHELL_LIB=$(python -m mass_tools.shell)
    source "$SHELL_LIB/usage.sh"   # first: --help prints the recipe's comment and variables
    ...
    source "$SHELL_LIB/common.sh"  # --user-dir, device arguments, decoding and scoring,
                                   # DRY_RUN's run_cmd (dry_run.sh)
    source "$SHELL_LIB/same_settings.sh"  # one message for a finished run's other settings
"""
