# Sourced by device_check.sh and device_tune.sh: their one optional argument, --prebuilt DIR.
# gelukit_prebuilt_arg <script name> "$@" sets $prebuilt to DIR as an absolute path (relative to
# the caller's directory), or "" without the argument; exits 1 with a usage line otherwise.
gelukit_prebuilt_arg() {
    local script="$1"
    shift
    prebuilt=""
    case "${1:-}" in
        "") ;;
        --prebuilt)
            [ -n "${2:-}" ] || { echo "$script: --prebuilt needs a directory" >&2; exit 1; }
            prebuilt="$(cd "$2" && pwd)" || exit 1
            ;;
        *)
            echo "$script: unknown argument '$1' (usage: $script.sh [--prebuilt DIR])" >&2
            exit 1
            ;;
    esac
}
