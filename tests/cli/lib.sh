# The preamble the tests/cli scripts share; each sources it first:
#   . "$(dirname "$0")/lib.sh" "$@"
# It checks the usage (SCRIPT PARALLAXC SRCDIR; exit 2 otherwise) and sets
#   parallaxc, src   the two arguments
#   py               Debian's python3, the one with torch and onnx
#   tmp              a fresh folder, removed at exit
#   passed, failed   the counts check keeps
# and defines check LABEL COMMAND...: PASS when COMMAND exits 0, else FAIL
# with the start of its output; pass LABEL / fail LABEL count a result the
# script decided itself; refuse LABEL TEXT COMMAND...: PASS when COMMAND
# fails and its output holds TEXT (a flag or input refused by name); step
# LABEL COMMAND...: like check, but the first failure ends the script (for
# steps that later ones build on).
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 PARALLAXC SRCDIR" >&2
    exit 2
fi
parallaxc=$1
src=$2
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { # LABEL COMMAND...
    local label=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then
        echo "PASS $label"
        passed=$((passed + 1))
    else
        echo "FAIL $label: $(head -c 800 "$tmp/log")"
        failed=$((failed + 1))
    fi
}
pass() {
    echo "ok   $1"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL $1"
    failed=$((failed + 1))
}
# refuse LABEL EXPECTED-TEXT COMMAND...: COMMAND must fail (exit 2, usage,
# or 1) and print the text.
refuse() {
    local label=$1 want=$2
    shift 2
    if "$@" >"$tmp/bad.out" 2>&1; then
        fail "$label was accepted"
    elif grep -qF -- "$want" "$tmp/bad.out"; then
        pass "$label is refused, naming the flag"
    else
        fail "$label: $(head -c 600 "$tmp/bad.out")"
    fi
}
step() { # LABEL COMMAND...: passes when the command does; stops the test when not
    local label=$1
    shift
    if "$@" >"$tmp/step.log" 2>&1; then
        pass "$label"
    else
        fail "$label: $(grep -v '^note' "$tmp/step.log" | tail -c 1200)"
        echo "$passed passed, $failed failed"
        exit 1
    fi
}
