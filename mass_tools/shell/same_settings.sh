# Shared by data-prep/ and the paper recipes (sourced, not run): the settings
# of a run, one KEY=VALUE a line in a file beside its outputs, and the one
# message that stops a run whose finished work was made with other settings.

# settings_differ FILE SETTING...: true if FILE holds other settings than
# these (one KEY=VALUE an argument); prints "  KEY: OLD before, NEW now" for
# each that changed, was added or was dropped.
settings_differ() {
    local file=$1 line key then now
    shift
    IFS= read -r -d '' then < "$file" || true  # no subshell: reruns stay fast
    printf -v now '%s\n' "$@"
    [ "$then" != "$now" ] || return 1
    declare -A before=() now=() seen=()
    while IFS= read -r line; do before[${line%%=*}]=${line#*=}; done < "$file"
    for line in "$@"; do now[${line%%=*}]=${line#*=}; done
    for key in "${!before[@]}" "${!now[@]}"; do
        [ -z "${seen[$key]:-}" ] || continue
        seen[$key]=1
        if [ "${before[$key]-(unset)}" != "${now[$key]-(unset)}" ]; then
            echo "  $key: ${before[$key]-(unset)} before, ${now[$key]-(unset)} now"
        fi
    done | sort
}

# other_settings_error WHAT FILE ADVICE SETTING...: stop if FILE holds other
# settings than these, in one form for every script:
#   error: WHAT with other settings:
#     KEY: OLD before, NEW now
#   ADVICE
other_settings_error() {
    local what=$1 file=$2 advice=$3 changes
    shift 3
    changes=$(settings_differ "$file" "$@") || return 0
    {
        echo "error: $what with other settings:"
        echo "$changes"
        echo "$advice"
    } >&2
    exit 1
}
