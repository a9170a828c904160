# Sourced by common.sh: DRY_RUN=1 prints the commands of a recipe that runs
# them through run_cmd / run_to, and runs none (nor writes anything).

DRY_RUN=${DRY_RUN:-0}
export DRY_RUN  # a stage recipe run by another prints its commands too

# shown WORD...: the words as one line a shell reads back the same (a word
# with anything but letters, digits and ./:=,@%+_- in single quotes).
shown() {
    local word line=""
    for word in "$@"; do
        if [[ ! $word =~ ^[A-Za-z0-9./:=,@%+_-]+$ ]]; then
            word="'${word//\'/\'\\\'\'}'"
        fi
        line+="$word "
    done
    echo "${line% }"
}

# run_cmd COMMAND...: run a stage's command; with DRY_RUN=1 only print it,
# after "+ " (VAR=value words first: the variables a stage recipe gets).
run_cmd() {
    if [ "$DRY_RUN" = 1 ]; then
        echo "+ $(shown "$@")"
        return 0
    fi
    "$@"
}

# run_to FILE COMMAND...: run_cmd, its standard output to FILE.
run_to() {
    local file=$1
    shift
    if [ "$DRY_RUN" = 1 ]; then
        echo "+ $(shown "$@") > $(shown "$file")"
        return 0
    fi
    "$@" > "$file"
}

# make_dir DIR: mkdir -p, except in a dry run (which writes nothing).
make_dir() { [ "$DRY_RUN" = 1 ] || mkdir -p "$@"; }
