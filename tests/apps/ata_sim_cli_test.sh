#!/usr/bin/env bash
# ata-sim's command line: bad input gives one clear line and a non-zero exit; a good run
# writes the JSON and CSV it promises.
set -euo pipefail
sim="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error "substring" args...: non-zero exit, exactly one line on stderr containing it.
expect_error() {
  local expected="$1"; shift
  if "$sim" "$@" >"$work/out" 2>"$work/err"; then fail "accepted: $*"; fi
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "expected one error line for '$*', got: $(cat "$work/err")"
  grep -qF -- "$expected" "$work/err" || fail "'$*': expected '$expected' in: $(cat "$work/err")"
}

expect_error "--batch" --batch 0
expect_error "--rounds" --rounds -3
expect_error "--workers" --workers abc
expect_error "--bogus" --bogus
expect_error "unknown strategy 'fast'" --strategies ata,fast
expect_error "unknown scenario 'nope'" --scenario nope
expect_error "--alpha" --alpha -1
expect_error "--seed: must be a whole number >= 0" --seed -1
echo '{"workers": [{"model": "exponential"}]}' >"$work/broken.json"
expect_error "missing \"mean\"" --scenario "$work/broken.json"
echo '{"workers": [{"model": "exponential", "mean": 1, "count": 3}]}' >"$work/three.json"
expect_error "disagrees with the 3 workers" --scenario "$work/three.json" --workers 4
expect_error "cannot write" --rounds 5 --json /proc/forbidden/out.json

"$sim" --scenario "$work/three.json" --batch 4 --rounds 50 --strategies ata-e,uta \
  --json "$work/run.json" --csv "$work/trace.csv" >"$work/out"
grep -q "wrote $work/run.json" "$work/out" || fail "did not report the JSON path"
for key in '"scenario"' '"workers": 3' '"batch": 4' '"rounds": 50' '"seed": 1' '"name": "ata-e"' \
           '"name": "ofta"' '"name": "gta"' '"wall_time"' '"worker_time"'; do
  grep -qF "$key" "$work/run.json" || fail "JSON lacks $key"
done
head -n1 "$work/trace.csv" | grep -q "^strategy,round,wall_time,worker_time" || fail "CSV header"
# The same seed gives the same numbers.
"$sim" --scenario "$work/three.json" --batch 4 --rounds 50 --strategies ata-e,uta --json "$work/again.json" >/dev/null
cmp -s "$work/run.json" "$work/again.json" || fail "same seed, different JSON"
"$sim" --help | grep -q -- "--strategies" || fail "help"
echo "ata-sim CLI: all cases as expected"
