# Shared by the example scripts (sourced, not run).

# The plugin directory for --user-dir, wherever the package is installed.
USER_DIR=${USER_DIR:-$(python -m mass_plugin)}
PREP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data-prep" && pwd)

# GPUs on this machine (0 on a CPU-only machine) unless NUM_GPUS is set.
NUM_GPUS=${NUM_GPUS:-$(python -c "import torch; print(torch.cuda.device_count())")}

# fairseq-train arguments for the device, and the --update-freq that keeps
# TOKENS_PER_UPDATE tokens per update whatever the number of GPUs.
device_args() {
    local workers=$(( NUM_GPUS > 0 ? NUM_GPUS : 1 ))
    local per_step=$(( MAX_TOKENS * workers ))
    local update_freq=$(( (TOKENS_PER_UPDATE + per_step - 1) / per_step ))
    if [ "$NUM_GPUS" -eq 0 ]; then
        echo "--cpu --update-freq $update_freq"
    else
        echo "--fp16 --distributed-world-size $NUM_GPUS --update-freq $update_freq"
    fi
}
