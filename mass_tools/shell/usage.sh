# Sourced first by each recipe: `bash RECIPE.sh --help` (or -h)
# prints the recipe's opening comment and the variables it reads with their
# defaults, then exits; any other argument is left to the recipe.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
    sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"
    echo
    echo "Variables (from the environment; the default follows :- or -, :? marks a required one):"
    grep -E '^[A-Z][A-Z0-9_]*=\$\{' "$0" | sed 's/^/  /'
    exit 0
fi
