# Sourced by device_check.sh and device_tune.sh: their one optional argument, --prebuilt DIR.
# gelukit_prebuilt_arg <script name> "$@" sets $prebuilt to DIR as an absolute path (relative to
# the caller's directory), or "" without the argument; exits 1 with a usage line otherwise
# (unknown or extra arguments included).
gelukit_prebuilt_arg() {
    local script="$1"
    shift
    prebuilt=""
    if [ $# -gt 2 ] || { [ $# -eq 2 ] && [ "$1" != "--prebuilt" ]; }; then
        echo "$script: unexpected arguments '$*' (usage: $script.sh [--prebuilt DIR])" >&2
        exit 1
    fi
    case "${1:-}" in
        "") ;;
        --prebuilt)
            [ -n "${2:-}" ] || { echo "$script: --prebuilt needs a directory" >&2; exit 1; }
            prebuilt="$(CDPATH='' cd -- "$2" > /dev/null && pwd)" || exit 1
            ;;
        *)
            echo "$script: unknown argument '$1' (usage: $script.sh [--prebuilt DIR])" >&2
            exit 1
            ;;
    esac
}
