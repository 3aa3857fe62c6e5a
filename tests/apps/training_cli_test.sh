#!/usr/bin/env bash
# ata-sgd / ata-prox command lines: bad input gives one clear line and a non-zero exit; a small
# real run (heart_scale) writes the JSON it promises.
set -euo pipefail
program="$1"
data="$2"
name=$(basename "$program")
source "$(dirname "$0")/cli_expectations.sh"

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

"$program" --data "$data" --scenario sqrt --workers 4 --unit-us 1 --batch 6 --rounds 3000 \
  --strategies ata-e,pull --json "$work/run.json" >"$work/out"
grep -q "wrote $work/run.json" "$work/out" || fail "did not report the JSON path"
for key in '"strategies"' '"name": "ata-e"' '"name": "gta"' '"name": "ofta"' '"wall_time"' '"worker_time"' \
           '"final_loss"' '"reached_target": true'; do
  grep -qF "$key" "$work/run.json" || fail "JSON lacks $key"
done
echo "$name CLI: all cases as expected"
