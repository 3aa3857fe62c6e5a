# Sourced by the CLI tests: a scratch folder, fail, and expect_error for the program in $program.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error "substring" args...: non-zero exit, exactly one line on stderr containing it.
expect_error() {
  local expected="$1"; shift
  if "$program" "$@" >"$work/out" 2>"$work/err"; then fail "accepted: $*"; fi
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "expected one error line for '$*', got: $(cat "$work/err")"
  grep -qF -- "$expected" "$work/err" || fail "'$*': expected '$expected' in: $(cat "$work/err")"
}
