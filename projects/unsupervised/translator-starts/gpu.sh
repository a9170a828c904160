#!/usr/bin/env bash
# The translator's three starts (projects.unsupervised.translator_starts) on
# one GPU, from the rounds of a CPU run packed to .gpuwork/work and the
# corpora's valid and test pairs in .gpuwork/data/para/en-fr. Here:
#   python -m projects.unsupervised.translator_starts \
#       --work-dir work/unsup-one-sitting --pack .gpuwork/work
#   mkdir -p .gpuwork/data/para/en-fr && cp SHARED/para/en-fr/{valid,test}.* .gpuwork/data/para/en-fr/
# There, from the repository root, fairseq installed (e.g. . .whl/setup.sh):
#   bash projects/unsupervised/translator-starts/gpu.sh OUT_DIR
# The starts run side by side in work/translator-starts (rerun: they resume);
# GEN_ENGINE=fairseq, since the rounds are done and need no CTranslate2.
# OUT_DIR gets gpu.txt (the device), starts.log (the command's output) and
# starts.tgz (every start's logs, valid.tsv and valid translations).
set -uo pipefail
source "$(python -m mass_tools.shell)/usage.sh"  # --help

OUT_DIR=${1:?give OUT_DIR, where the logs go}
LIMIT=${LIMIT:-540}  # seconds: a device call runs at most 600
mkdir -p "$OUT_DIR" work
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT_DIR/gpu.txt"
GEN_ENGINE=fairseq timeout "$LIMIT" python -m projects.unsupervised.translator_starts \
    --data .gpuwork/data --work-dir .gpuwork/work --out work/translator-starts --jobs 3 \
    2>&1 | tee "$OUT_DIR/starts.log"
status=${PIPESTATUS[0]}
(cd work && find translator-starts -path translator-starts/starts.csv -o -path '*/run.log' \
    -o -path '*/translator/mass*/train.log' -o -path '*/translator/round*-*' -type f \
    \( -name '*.tsv' -o -name train.log -o -name 'translator.valid.*.txt' -o -name seconds \) |
    tar czf "$OUT_DIR/starts.tgz" -T -)
exit "$status"
