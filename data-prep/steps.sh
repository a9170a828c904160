# shellcheck shell=bash
# Sourced by data-prep/lib.sh: resumable steps. A step is done when the files
# it wrote are still there and the same, not when a marker says so: its
# record, DONE/NAME, lists each output with its size, modification time (in
# ns) and, under 4 MiB (dictionaries, subword models, references), its MD5.
declare -A STEPS_SEEN=()   # the steps met in this run, done before or run now
REDO_REST=0                # 1 once a step ran: every step after it runs too

# fingerprint FILE...: the record of these files, a line each:
# "SIZE MTIME MD5 PATH" (PATH from OUT; MD5 "-" for a file of 4 MiB or more).
fingerprint() {
    local size mtime name sum
    stat -c '%s %.9Y %n' -- "$@" | while read -r size mtime name; do
        sum=-
        if [ "$size" -lt 4194304 ]; then sum=$(md5sum < "$name") && sum=${sum%% *}; fi
        echo "$size $mtime $sum ${name#"$OUT"/}"
    done
}

# stat_outputs: "SIZE MTIME" of every output the records in DONE list, in
# STATS by path, read with one stat when the first step is checked. Outputs
# change only when a step runs, and every step after that one runs anyway:
# a finished rerun costs one stat, not one a step.
declare -A STATS=()
stat_outputs() {
    local record records=() size mtime name
    for record in "$DONE"/*; do
        case ${record##*/} in settings | finished | *.tmp) ;; *) records+=("$record") ;; esac
    done
    [ "${#records[@]}" -gt 0 ] || return 0
    while read -r size mtime name; do
        STATS[$name]="$size $mtime"
    done < <(cd "$OUT" && cut -d' ' -f4- "${records[@]}" \
                 | xargs -r -d '\n' stat -c '%s %.9Y %n' -- 2> /dev/null)
}

# unchanged RECORD FILE...: the files are those RECORD lists, as they were:
# the same size, and the same MD5 where it was taken and the time differs.
unchanged() {
    local record=$1 recorded size mtime sum name i=0 file now
    shift
    [ -f "$record" ] && mapfile -t recorded < "$record" || return 1
    [ "${#recorded[@]}" -eq "$#" ] || return 1
    [ "${STATS_READ:-0}" = 1 ] || { stat_outputs; STATS_READ=1; }
    for file in "$@"; do
        read -r size mtime sum name <<< "${recorded[i]}"
        now=${STATS[$name]:-}
        [ "$name" = "${file#"$OUT"/}" ] && [ "${now% *}" = "$size" ] || return 1
        if [ "${now#* }" != "$mtime" ] && [ "$sum" != - ]; then
            [ "$(md5sum < "$file")" = "$sum  -" ] || return 1
        fi
        i=$((i + 1))
    done
}

# step NAME OUTPUT... -- COMMAND [ARGS...]: run COMMAND as the step NAME,
# which writes the files OUTPUT..., unless it finished before and its outputs
# are as it left them. A step whose outputs are missing or changed is run
# again, and so is every step after it. Outputs are written whole or not at
# all (temporary names), so an interrupted step is simply run again.
step() {
    local name=$1 record=$DONE/$1 outputs=()
    shift
    while [ "$1" != -- ]; do outputs+=("$1"); shift; done
    shift
    [ -z "${STEPS_SEEN[$name]:-}" ] || return 0  # met before in this run
    STEPS_SEEN[$name]=1
    if [ "$REDO_REST" = 0 ] && [ -f "$record" ]; then
        if unchanged "$record" "${outputs[@]}"; then
            echo "== $name: done already"
            return 0
        fi
        echo "== $name: its outputs are missing or changed since it was done:" \
             "doing it again, and every step after it"
    fi
    rm -f "$record" "$DONE/finished"
    REDO_REST=1
    echo "== $name"
    "$@"
    if ! fingerprint "${outputs[@]}" > "$record.tmp" 2> /dev/null \
            || [ "$(wc -l < "$record.tmp")" -ne "${#outputs[@]}" ]; then
        echo "error: step $name ended without writing all of: ${outputs[*]}" >&2
        exit 1
    fi
    mv "$record.tmp" "$record"
}

# finish: every step of the script is done; from now on other settings in
# the same OUT stop it (check_settings).
finish() {
    touch "$DONE/finished"
}
