#!/usr/bin/env bash
# ata-sim's command line: bad input gives one clear line and a non-zero exit; a good run
# writes the JSON and CSV it promises.
set -euo pipefail
program="$1"
source "$(dirname "$0")/cli_expectations.sh"

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

"$program" --scenario "$work/three.json" --batch 4 --rounds 50 --strategies ata-e,ata-auto,uta \
  --json "$work/run.json" --csv "$work/trace.csv" >"$work/out"
grep -q "wrote $work/run.json" "$work/out" || fail "did not report the JSON path"
for key in '"scenario"' '"workers": 3' '"batch": 4' '"rounds": 50' '"seed": 1' '"name": "ata-e"' \
           '"name": "ofta"' '"name": "gta"' '"name": "ata-auto"' '"wall_time"' '"worker_time"'; do
  grep -qF "$key" "$work/run.json" || fail "JSON lacks $key"
done
head -n1 "$work/trace.csv" | grep -q "^strategy,round,wall_time,worker_time" || fail "CSV header"
# The same seed gives the same numbers.
"$program" --scenario "$work/three.json" --batch 4 --rounds 50 --strategies ata-e,ata-auto,uta \
  --json "$work/again.json" >/dev/null
cmp -s "$work/run.json" "$work/again.json" || fail "same seed, different JSON"
"$program" --help | grep -q -- "--strategies" || fail "help"
echo "ata-sim CLI: all cases as expected"
