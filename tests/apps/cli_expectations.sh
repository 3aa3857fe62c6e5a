# Sourced by the CLI tests: a scratch folder, fail, and expect_error for the program in $program.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Every file under $work but the captured output: what a failed run must not have changed.
listing() { (cd "$work" && find . -path ./out -o -path ./err -o -print | LC_ALL=C sort); }

# expect_error "substring" args...: non-zero exit, exactly one line on stderr containing it,
# only printable ASCII in it, and no file created or removed under $work.
expect_error() {
  local expected="$1"; shift
  local before
  before=$(listing)
  if "$program" "$@" >"$work/out" 2>"$work/err"; then fail "accepted: $*"; fi
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "expected one error line for '$*', got: $(cat "$work/err")"
  grep -qF -- "$expected" "$work/err" || fail "'$*': expected '$expected' in: $(cat "$work/err")"
  if LC_ALL=C grep -q '[^[:print:]]' "$work/err"; then fail "'$*': raw bytes in: $(cat -v "$work/err")"; fi
  [ "$(listing)" = "$before" ] || fail "'$*' changed files: $(diff <(echo "$before") <(listing))"
}

# expect_refused_before_run: the last expect_error stopped before any work (nothing printed).
expect_refused_before_run() {
  [ ! -s "$work/out" ] || fail "ran before refusing: $(head -n2 "$work/out")"
}

# A binary built with a sanitizer cannot run under a small address-space limit (ulimit -v).
sanitized() { grep -qa -e __asan_init -e __tsan_init "$program"; }
