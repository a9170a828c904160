# Sourced by settings.sh: how the paper recipes show and run their commands.
# DRY_RUN=1 prints them (common.sh's run_cmd, run_to) and runs none; a stage
# recipe that knows DRY_RUN (pretrain.sh, examples/finetune_nmt.sh, ...) is
# run all the same and prints its own. LAUNCHER runs fairseq-train's ranks.

# flat WORD...: the words of its arguments on one line, as one string (option
# lists for a stage recipe's EXTRA_ARGS or MODEL_ARGS; the presets span lines)
flat() {
    # shellcheck disable=SC2048,SC2086
    echo $*
}

# progress LINE: one line of progress, with the time and the recipe's name.
progress() {
    echo "== $(date +%H:%M:%S) $(basename "$0" .sh): $*"
}

# finished LINE: the last progress line (in a dry run: that nothing ran).
finished() {
    if [ "$DRY_RUN" = 1 ]; then progress "dry run: nothing was run"; else progress "$@"; fi
}

# run_recipe env VAR=VALUE... bash RECIPE: run a stage recipe; in a dry run
# print that line, then let the recipe print its own commands (DRY_RUN=1 is
# in its environment).
run_recipe() {
    run_cmd "$@"
    if [ "$DRY_RUN" = 1 ]; then "$@" | sed 's/^/  /'; fi
}

# The training processes: those LAUNCHER starts (torchrun's --nproc_per_node
# times --nnodes), else one per GPU (fairseq starts them), else one.
launcher_ranks() {
    local per_node nodes
    if [ -z "${LAUNCHER:-}" ]; then
        echo $(( NUM_GPUS > 0 ? NUM_GPUS : 1 ))
        return
    fi
    per_node=$(grep -oP -- '--nproc[_-]per[_-]node[ =]\K[0-9]+' <<< "$LAUNCHER" || echo 1)
    nodes=$(grep -oP -- '--nnodes[ =]\K[0-9]+' <<< "$LAUNCHER" || echo 1)
    echo $(( per_node * nodes ))
}

# fairseq-train's device arguments for RANKS processes: common.sh's
# device_args (fp16, --distributed-world-size, the --update-freq that keeps
# TOKENS_PER_UPDATE), counting every rank of every node; on CPUs, gloo.
# fairseq reads a launcher's environment only with --distributed-world-size > 1.
launch_device_args() {
    local ranks
    ranks=$(launcher_ranks)
    if [ "$NUM_GPUS" -gt 0 ]; then
        NUM_GPUS=$ranks device_args
    else  # device_args counts one CPU process: give it the tokens of all ranks
        local args
        args=$(MAX_TOKENS=$(( MAX_TOKENS * ranks )) device_args)
        if [ "$ranks" -gt 1 ]; then
            args+=" --distributed-backend gloo --distributed-world-size $ranks"
        fi
        echo "$args"
    fi
}

# fairseq-train, through LAUNCHER when there is one (torchrun runs the
# console script in each process it starts).
train_cmd() {
    local train
    train=$(command -v fairseq-train) || {
        echo "error: fairseq-train is not on PATH: activate the environment where" \
             "mass-plugin is installed (pip install -e .)" >&2
        exit 1
    }
    # shellcheck disable=SC2086
    run_cmd ${LAUNCHER:-} "$train" "$@"
}
