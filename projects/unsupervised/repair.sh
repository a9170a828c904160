#!/usr/bin/env bash
# Unsupervised translation by word-by-word translation repaired by a model of
# the target language (Kim et al., 2018), with no parallel training text:
# python -m projects.unsupervised.repair (projects/unsupervised/repair.py), run
# from the repository root. Its --help describes the rounds and every variable
# with its default; each variable is read from the environment, as before
# (VAR=value bash projects/unsupervised/repair.sh), or given as an option.
exec python -m projects.unsupervised.repair "$@"
