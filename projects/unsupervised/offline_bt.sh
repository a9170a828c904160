#!/usr/bin/env bash
# Unsupervised NMT by offline iterative back-translation, from a cross-lingual
# MASS checkpoint (masked_s2s --langs L1,L2), with no parallel training data:
# python -m projects.unsupervised.offline_bt (projects/unsupervised/offline_bt.py),
# run from the repository root. Its --help describes the rounds and every
# variable with its default; each variable is read from the environment, as
# before (VAR=value bash projects/unsupervised/offline_bt.sh), or given as an option.
exec python -m projects.unsupervised.offline_bt "$@"
