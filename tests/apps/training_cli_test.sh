#!/usr/bin/env bash
# ata-sgd / ata-prox command lines: bad input gives one clear line and a non-zero exit; a small
# real run (heart_scale) writes the JSON it promises.
set -euo pipefail
app="$1"
data="$2"
name=$(basename "$app")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_error() {
  local expected="$1"; shift
  if "$app" "$@" >"$work/out" 2>"$work/err"; then fail "accepted: $*"; fi
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "expected one error line for '$*', got: $(cat "$work/err")"
  grep -qF -- "$expected" "$work/err" || fail "'$*': expected '$expected' in: $(cat "$work/err")"
}

expect_error "--batch" --batch 0
expect_error "--bogus" --bogus
expect_error "--target-gap" --target-gap 2
expect_error "unknown problem 'svm'" --problem svm
expect_error "unknown strategy 'fast'" --strategies fast
expect_error "unknown scenario 'nope'" --scenario nope
expect_error "cannot read LIBSVM file" --data "$work/missing.svm"
printf '+1 1:0.5\n-1 0:1\n' >"$work/bad.svm"
expect_error "line 2: feature index 0" --data "$work/bad.svm"
if [ "$name" = ata-prox ]; then expect_error "no prox" --problem quadratic; fi

"$app" --data "$data" --scenario sqrt --workers 4 --unit-us 1 --batch 6 --rounds 3000 \
  --strategies ata-e,pull --json "$work/run.json" >"$work/out"
grep -q "wrote $work/run.json" "$work/out" || fail "did not report the JSON path"
for key in '"strategies"' '"name": "ata-e"' '"name": "gta"' '"name": "ofta"' '"wall_time"' '"worker_time"' \
           '"final_loss"' '"reached_target": true'; do
  grep -qF "$key" "$work/run.json" || fail "JSON lacks $key"
done
echo "$name CLI: all cases as expected"
