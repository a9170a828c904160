# Sourced by settings.sh: the checks of the paper recipes before they train,
# and the marks of finished stages. A dry run checks and marks nothing: it
# prints the commands whether or not the data is there yet.
source "$SHELL_LIB/same_settings.sh"

# need PATH VARIABLE ADVICE: stop unless the file PATH exists and is not
# empty, saying which variable named it and what to do (a dry run notes it).
need() {
    if [ ! -s "$1" ]; then
        if [ "$DRY_RUN" = 1 ]; then
            progress "dry run: $1 is not there ($2)"
            return 0
        fi
        echo "error: $2: $1 is missing or empty; $3" >&2
        exit 1
    fi
}

# is_done NAME / done_mark NAME: the mark of a finished stage in WORK_DIR
# (a dry run finds none and leaves none).
is_done() { [ "$DRY_RUN" != 1 ] && [ -f "$WORK_DIR/.done.$1" ]; }
done_mark() { [ "$DRY_RUN" = 1 ] || touch "$WORK_DIR/.done.$1"; }

# run_settings [NAME...]: the settings of this run, a KEY=VALUE line each:
# every variable the recipe reads (its KEY=${KEY...} lines, as --help lists
# them) but those that only place or show it, and the NAMEs (more rounds,
# subsets or starts add to a run).
run_settings() {
    local name value
    for name in $(grep -oE '^[A-Z][A-Z0-9_]*=\$\{' "$0" | cut -d= -f1); do
        case " WORK_DIR SAVE_DIR LAUNCHER LOG_INTERVAL $* " in *" $name "*) continue ;; esac
        value=${!name}
        echo "$name=${value//$'\n'/ }"
    done
}

# same_settings WHAT ADVICE [NAME...]: stop if WORK_DIR holds finished work
# (stage marks, scored rows) of other settings than run_settings NAME...:
# a finished stage is skipped only when it was made as asked. The settings
# are kept in WORK_DIR/.settings.
same_settings() {
    local what=$1 advice=$2 file=$WORK_DIR/.settings settings
    shift 2
    [ "$DRY_RUN" != 1 ] || return 0
    mapfile -t settings < <(run_settings "$@")
    if finished_work && [ ! -f "$file" ]; then  # finished by an older recipe
        echo "error: $WORK_DIR was $what before its settings were kept: $advice" >&2
        exit 1
    elif finished_work; then
        other_settings_error "$WORK_DIR was $what" "$file" "$advice" "${settings[@]}"
    fi
    printf '%s\n' "${settings[@]}" > "$file"
}

# finished_work: WORK_DIR has a stage mark or a results table with a row.
finished_work() {
    local table
    compgen -G "$WORK_DIR/.done.*" > /dev/null && return 0
    for table in "$WORK_DIR"/results*.tsv; do
        [ -f "$table" ] && [ "$(wc -l < "$table")" -gt 1 ] && return 0
    done
    return 1
}

# same_dictionary NAME...: stop unless DATA_BIN's files NAME or NAME.* (e.g.
# train.en, valid) were binarized with the dictionary training loads with them
# (mass-binarize's record, DATA_BIN/made_with.json): the symbol numbers of one
# dictionary read with another are other words, and nothing else says so.
same_dictionary() {
    [ "$DRY_RUN" = 1 ] || python -m mass_tools.data_bin_record "$DATA_BIN" "$@"
}
