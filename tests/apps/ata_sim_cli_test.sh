#!/usr/bin/env bash
# ata-sim's command line: bad input gives one clear line and a non-zero exit, and writes
# nothing; a good run writes the JSON and CSV it promises, whole.
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
expect_error "--backups: backups must be off, copies or on, got 'maybe'" --backups maybe
expect_error "--ata-auto-race: bogus not in {fungible,indexed,off}" --ata-auto-race bogus
expect_error "--backup-threshold: must be a number > 1, got '1'" --backup-threshold 1
expect_error "--backup-copies: must be a whole number from 1 to 16, got '0'" --backup-copies 0
for bad in 0 -1 abc 1.5 1000000001; do
  expect_error "--frontier-probe-rounds: must be a whole number from 1 to 1000000000, got '$bad'" \
    --frontier-probe-rounds "$bad"
  expect_refused_before_run
done
# The price of a worker-second: a finite number >= 0.
for price in -1 inf nan abc "" 0x1p3 1e400; do
  expect_error "--work-price: must be a number >= 0, got '$price'" --work-price "$price"
  expect_refused_before_run
done

# Numbers: decimal whole numbers that fit, nothing clamped or read in another base.
expect_error "--rounds: must be a whole number from 1 to 1000000000, got '18446744073709551616'" \
  --rounds 18446744073709551616
expect_error "--seed: must be a whole number >= 0, got '18446744073709551616'" --seed 18446744073709551616
expect_error "--batch: must be a whole number from 1 to 1000000000, got '0x10'" --batch 0x10
expect_error "--workers: must be a whole number from 1 to 100000, got '100001'" --workers 100001
expect_error "--dim: must be a whole number from 1 to 1000000, got '4294967296'" --sgd --dim 4294967296
expect_error "--step: must be a number in (0, 2), got '3'" --sgd --step 3
expect_error "--json: must not be empty" --json ""
expect_error "--strategies: empty item in ','" --strategies , --rounds 5
expect_error "--strategies: empty item in 'ata,,gta'" --strategies ata,,gta
# The asynchronous streams: R is required and >= 1, a target needs SGD.
expect_error "--delay-threshold: required by the ringmaster strategies" --strategies ringmaster-ata
expect_refused_before_run
expect_error "--delay-threshold: must be a whole number from 1 to 1000000000, got '0'" \
  --strategies ringmaster --delay-threshold 0
expect_error "--target: needs --sgd" --target 0.1
expect_error "--target: must be a number > 0, got 'nan'" --sgd --target nan
expect_error "--stops: maybe not in {on,off}" --stops maybe
expect_error "--stream-step: must be a number in (0, 2), got '2'" --stream-step 2
expect_error "and up to 1e+12 gradients x 1 streams) is more than the limit" \
  --strategies ringmaster --delay-threshold 4 --stream-gradients 1000000000000
# Work that would take hours is refused before it starts.
expect_error "about 7e+12 task-time draws (--batch 1000000000 x --rounds 1000 x 7 strategies) is more than the limit" \
  --batch 1000000000
expect_refused_before_run

# Scenario files: unreadable, huge, deep, binary, sloppy.
expect_error "cannot read scenario file '$work': it is a folder" --scenario "$work"
expect_error "cannot read scenario file '/dev/zero': larger than the limit of 16 MiB" --scenario /dev/zero
expect_error "No such file or directory" --scenario "$work/missing.json"
{ printf '{"workers": '; head -c 1000000 /dev/zero | tr '\0' '['; head -c 1000000 /dev/zero | tr '\0' ']'; printf '}'; } \
  >"$work/deep-arrays.json"
expect_error "nested deeper than 64 arrays and objects (the limit of a scenario file)" --scenario "$work/deep-arrays.json"
mixtures() {  # a worker that is $1 mixtures deep
  printf '{"workers": [{'
  for ((i = 0; i < $1; i++)); do printf '"model": "mixture", "components": [{"weight": 1, '; done
  printf '"model": "constant", "value": 1'
  for ((i = 0; i < $1; i++)); do printf '}]'; done
  printf '}]}'
}
mixtures 100000 >"$work/deep-mixtures.json"
expect_error "nested deeper than 64 arrays and objects" --scenario "$work/deep-mixtures.json"
mixtures 17 >"$work/mixtures-17.json"
expect_error "mixtures nested deeper than 16 levels" --scenario "$work/mixtures-17.json"
head -c 300 "$program" >"$work/binary.json"
expect_error "scenario $work/binary.json: invalid JSON: parse error at line 1, column 1" --scenario "$work/binary.json"
scenario_error() {  # scenario_error "expected" 'json'
  printf '%s' "$2" >"$work/scenario.json"
  expect_error "$1" --scenario "$work/scenario.json" --rounds 5
}
one='{"model": "constant", "value": 1}'
scenario_error 'workers[0]: repeated key "mean"' '{"workers": [{"model": "exponential", "mean": 1, "mean": 2}]}'
scenario_error 'workers[0].outage: unknown key "timeuot"' \
  '{"workers": [{"model": "constant", "value": 1, "outage": {"probability": 0.1, "timeuot": 5}}]}'
scenario_error '"weight" belongs to a mixture component' '{"workers": [{"model": "constant", "value": 1, "weight": 1}]}'
scenario_error '"round" belongs to an entry of "changes"' '{"workers": [{"model": "constant", "value": 1, "round": 5}]}'
scenario_error 'changes[0]: missing "worker"' \
  "{\"workers\": [$one], \"changes\": [{\"round\": 2, \"model\": \"constant\", \"value\": 2}]}"
scenario_error "the mixture's weights must sum to 1, got 0.9" \
  '{"workers": [{"model": "mixture", "components": [{"weight": 0.5, "model": "constant", "value": 1},
                                                    {"weight": 0.4, "model": "constant", "value": 2}]}]}'
scenario_error 'name: must be a string' "{\"name\": 5, \"workers\": [$one]}"
scenario_error 'outage probability must be in [0, 0.999], got 0.999999999' \
  '{"workers": [{"model": "constant", "value": 1, "outage": {"probability": 0.999999999, "timeout": 1}}]}'
scenario_error '"count" 1000000000000000000 makes more than 100000 workers' \
  '{"workers": [{"model": "constant", "value": 1, "count": 1000000000000000000}]}'
echo '{"workers": [{"model": "exponential"}]}' >"$work/broken.json"
expect_error "missing \"mean\"" --scenario "$work/broken.json"
echo '{"workers": [{"model": "exponential", "mean": 1, "count": 3}]}' >"$work/three.json"
expect_error "disagrees with the 3 workers" --scenario "$work/three.json" --workers 4

# Outputs are checked before the run, with the reason, and nothing is written.
expect_error "--json '/proc/forbidden/out.json': cannot create a file in '/proc'" --rounds 5 --json /proc/forbidden/out.json
expect_refused_before_run
expect_error "--json '$work': is a folder, not a file" --rounds 5 --json "$work"
expect_refused_before_run
echo "not a folder" >"$work/plain.txt"
expect_error "--csv '$work/plain.txt/trace.csv': '$work/plain.txt' is not a folder" --rounds 5 --csv "$work/plain.txt/trace.csv"
expect_refused_before_run
expect_error "--plot '$work/plain.txt': '$work/plain.txt' is not a folder" --rounds 5 --plot "$work/plain.txt"
expect_refused_before_run
# A write that fails half-way (here: the file size limit) leaves the previous file as it was,
# says why, and leaves no temporary file behind.
"$program" --rounds 50 --csv "$work/keep.csv" >/dev/null
cp "$work/keep.csv" "$work/keep.orig"
if (trap '' XFSZ; ulimit -f 8; "$program" --rounds 400 --csv "$work/keep.csv") >"$work/out" 2>"$work/err"; then
  fail "a write beyond the file size limit succeeded"
fi
grep -qF "cannot write '$work/keep.csv': File too large" "$work/err" || fail "no reason for the failed write: $(cat "$work/err")"
cmp -s "$work/keep.csv" "$work/keep.orig" || fail "a failed write damaged the previous file"
[ -z "$(find "$work" -name '.keep.csv.tmp*')" ] || fail "a failed write left its temporary file"

# The plotter runs without a shell: a folder name with quotes is a folder name, not a command.
injection="p/x'; touch pwned; echo '"
if (cd "$work" && "$program" --rounds 10 --strategies ata --plot "$injection") >"$work/out" 2>"$work/err"; then
  [ -f "$work/$injection/regret.png" ] || fail "no plot in a folder whose name has quotes"
else
  grep -qF "plotting failed" "$work/err" || fail "plotting: $(cat "$work/err")"  # no matplotlib here
fi
[ ! -e "$work/pwned" ] || fail "the --plot folder's name ran as a shell command"
if ATA_PYTHON="$work/no-such-python" "$program" --rounds 10 --plot "$work/plots" >"$work/out" 2>"$work/err"; then
  fail "plotting with a missing interpreter succeeded"
fi
grep -qF "plotting failed: cannot run $work/no-such-python: No such file or directory" "$work/err" ||
  fail "missing interpreter: $(cat "$work/err")"

"$program" --scenario "$work/three.json" --batch 4 --rounds 50 --strategies ata-e,ata-auto,uta \
  --json "$work/run.json" --csv "$work/trace.csv" >"$work/out"
grep -q "wrote $work/run.json" "$work/out" || fail "did not report the JSON path"
for key in '"scenario"' '"workers": 3' '"batch": 4' '"rounds": 50' '"seed": 1' '"name": "ata-e"' \
           '"name": "ofta"' '"name": "gta"' '"name": "ata-auto"' '"wall_time"' '"worker_time"'; do
  grep -qF "$key" "$work/run.json" || fail "JSON lacks $key"
done
grep -qF '"ata_auto_race": "fungible"' "$work/run.json" || fail "JSON lacks ata_auto_race"
grep -q "^ata-auto played: .* of the rounds$" "$work/out" || fail "no line of the plans ata-auto played"
grep -qF '"played_plans"' "$work/run.json" || fail "JSON lacks ata-auto's played_plans"
head -n1 "$work/trace.csv" | grep -q "^strategy,round,wall_time,worker_time" || fail "CSV header"
# The same seed gives the same numbers.
"$program" --scenario "$work/three.json" --batch 4 --rounds 50 --strategies ata-e,ata-auto,uta \
  --json "$work/again.json" >/dev/null
cmp -s "$work/run.json" "$work/again.json" || fail "same seed, different JSON"
# Into a file first: grep -q would close the pipe at its match, and the help (over 4 kB) would
# meet SIGPIPE on its second write.
"$program" --help >"$work/help"
grep -q -- "--strategies" "$work/help" || fail "help"
grep -q -- "--work-price" "$work/help" || fail "help lacks --work-price"
grep -q -- "--delay-threshold" "$work/help" || fail "help lacks --delay-threshold"

# The objective: a column, its ratio to OFTA, in the JSON and the CSV; 1/n by default.
"$program" --rounds 20 --strategies race:3,race:6 --backups off --json "$work/race.json" \
  --csv "$work/race.csv" >"$work/out"
grep -q "objective = wall + p x worker time, p = 0.01961 (1/n, the default)" "$work/out" || fail "default price: $(cat "$work/out")"
grep -q "objective.*obj/OFTA.*wall/EOFTA" "$work/out" || fail "table header: $(cat "$work/out")"
for name in race:3 race:6 eofta; do grep -q "^$name " "$work/out" || fail "no row for $name"; done
for key in '"work_price": 0.0196078431372549' '"work_price_default": true' '"objective":' \
           '"objective_vs_ofta": 1.0' '"name": "race:3"' '"name": "race:6"' '"eofta": "ran"' '"eofta_left_out": null'; do
  grep -qF "$key" "$work/race.json" || fail "JSON lacks $key"
done
head -n1 "$work/race.csv" | grep -q "^strategy,round,wall_time,worker_time,objective," || fail "CSV objective column"
# The plots: every strategy a series, race:M in styles of their own (plot.py's EXTRA_STYLES).
if "$program" --rounds 20 --strategies race:3,race:6 --backups off --plot "$work/race-plots" >"$work/out" 2>"$work/err"; then
  for file in objective.png wall_vs_worker_time.png wall_time.png frontier.png; do
    [ -s "$work/race-plots/$file" ] || fail "no $file"
  done
  python3 - "$work/race-plots/plot-data.json" <<'PY' || fail "plot data lacks the races"
import json, sys
figures = json.load(open(sys.argv[1]))["figures"]
for f in figures:
    if f["bars"]:  # gantt.png: the copies of one strategy
        continue
    labels = [s["label"] for s in f["series"]]
    if f["file"].endswith("frontier.png"):  # probes (hidden from the legend), the hull, the runs
        assert "_race:1" in labels and "race:3" in labels and "frontier" in labels, labels
        assert any(l.startswith("frontier curve") for l in labels), labels
        continue
    assert labels[:2] == ["race:3", "race:6"] and "eofta" in labels, labels
PY
else
  grep -qF "plotting failed" "$work/err" || fail "plotting: $(cat "$work/err")"  # no matplotlib here
fi
grep -q "^race:6,20," "$work/race.csv" || fail "CSV lacks race:6"
"$program" --rounds 20 --work-price 0 --json "$work/p0.json" >"$work/out"
grep -q "p = 0$" "$work/out" || fail "--work-price 0: $(head -n5 "$work/out")"
python3 - "$work/p0.json" <<'PY' || fail "--work-price 0: objective is not the wall time"
import json, sys
runs = json.load(open(sys.argv[1]))["strategies"]
assert all(r["objective"] == r["wall_time"] for r in runs), runs
PY

# The frontier yardstick: a row, the plan it chose, the column obj/frontier, and the JSON.
"$program" --rounds 30 --strategies frontier --frontier-probe-rounds 10 --backups off \
  --json "$work/frontier.json" >"$work/out"
grep -q "^frontier " "$work/out" || fail "no frontier row: $(cat "$work/out")"
grep -q "obj/frontier" "$work/out" || fail "no obj/frontier column: $(cat "$work/out")"
grep -qE "^frontier: (race:[0-9]+|ofta|eofta) \(probe objective .* over 10 probe rounds" "$work/out" ||
  fail "no frontier plan line: $(cat "$work/out")"
python3 - "$work/frontier.json" <<'PY' || fail "frontier JSON"
import json, sys
d = json.load(open(sys.argv[1]))
f = d["frontier"]
assert f["probe_rounds"] == 10 and f["probe_seed"] != d["seed"], f
plans = [c["plan"] for c in f["candidates"]]
assert f["plan"] in plans and "ofta" in plans and "race:1" in plans and "race:51" in plans, plans
best = min(f["candidates"], key=lambda c: c["objective"])
assert best["plan"] == f["plan"] and best["objective"] == f["probe_objective"], f
runs = {r["name"]: r for r in d["strategies"]}
assert runs["frontier"]["objective_vs_frontier"] == 1.0, runs["frontier"]
assert abs(runs["gta"]["objective_vs_frontier"] - runs["gta"]["objective"] / runs["frontier"]["objective"]) < 1e-12
assert d["frontier_left_out"] is None
PY

# A yardstick never blocks a run: where EOFTA does not fit, it is left out with a note.
for case in "sqrt --workers 2000" "log --workers 1000"; do
  # shellcheck disable=SC2086
  "$program" --scenario $case --batch 500 --rounds 3 --strategies ata --json "$work/big.json" \
    >"$work/out" 2>"$work/err" || fail "--scenario $case --batch 500 failed: $(cat "$work/err")"
  [ "$(grep -c "^note: EOFTA yardstick left out: EOFTA for n = " "$work/out")" -eq 1 ] || fail "no note: $(cat "$work/out")"
  ! grep -q "wall/EOFTA" "$work/out" || fail "an EOFTA column without EOFTA"
  ! grep -q "^eofta " "$work/out" || fail "an EOFTA row without EOFTA"
  grep -qF '"wall_time_vs_eofta": null' "$work/big.json" || fail "JSON ratio to EOFTA is not null"
  grep -qF '"eofta": null' "$work/big.json" || fail "JSON eofta is not null"
  grep -qF '"eofta_left_out": "EOFTA for n = ' "$work/big.json" || fail "JSON lacks the reason"
done
# --trace: a Chrome-trace JSON file, bounded, written whole or not at all.
expect_error "--trace: must not be empty" --trace ""
expect_error "--trace-rounds: must be a whole number from 1 to 10000, got '0'" --trace "$work/t.json" --trace-rounds 0
expect_error "--trace-unit-us: must be a number in (0, 1e+09], got '0'" --trace "$work/t.json" --trace-unit-us 0
expect_error "--gantt-strategy: not one of the strategies run, got 'nope'" --gantt-strategy nope
printf x >"$work/a-file"
expect_error "--trace '$work/a-file/t.json': '$work/a-file' is not a folder" --rounds 5 --trace "$work/a-file/t.json"
[ ! -e "$work/t.json" ] || fail "a refused --trace wrote a file"
"$program" --rounds 50 --workers 6 --trace "$work/t.json" --trace-rounds 3 >"$work/out"
grep -qE "^wrote $work/t.json: 7 strategies x 6 rounds, [0-9]+ events, [0-9]+ bytes" "$work/out" ||
  fail "--trace: $(grep wrote "$work/out")"
python3 -m json.tool "$work/t.json" >/dev/null || fail "--trace: not JSON"
[ "$(grep -o '"cat":"round"' "$work/t.json" | wc -l)" -eq 42 ] || fail "--trace: not 7 x 6 round slices (6 strategies and the frontier)"
! ls "$work"/.t.json* 2>/dev/null || fail "--trace left a temporary file"

# The streams: a table of time to target beside the rounds, their counts in the JSON, and the
# same numbers for the same seed.
stream_run() {
  "$program" --workers 12 --rounds 200 --sgd --dim 10 --noise 0.1 --step 0.2 --stream-step 0.02 \
    --target 0.05 --delay-threshold 8 --strategies ringmaster,ringmaster-ata,ringmaster-oracle,ata-auto \
    --backups off --json "$1"
}
stream_run "$work/stream.json" >"$work/out"
grep -q "^asynchronous streams (R = 8, stops on, step 0.02) beside the rounds:" "$work/out" ||
  fail "no stream table: $(cat "$work/out")"
for name in ringmaster ringmaster-ata ringmaster-oracle ata-auto; do
  grep -qE "^$name +[0-9.e+]+ +[0-9.e+]+ " "$work/out" || fail "no timed row for $name"
done
for key in '"target": 0.05' '"delay_threshold": 8' '"stops": true' '"stale_share"' '"gradients_applied"' \
           '"tasks_stopped"' '"target_wall_time"' '"target_worker_time"'; do
  grep -qF "$key" "$work/stream.json" || fail "stream JSON lacks $key"
done
stream_run "$work/stream-again.json" >/dev/null
cmp -s "$work/stream.json" "$work/stream-again.json" || fail "same seed, different stream JSON"
# Without the stream flags the JSON has none of their keys (the paper's outputs unchanged).
grep -qF '"target' "$work/run.json" && fail "a run without --target has target keys"
grep -qF '"delay_threshold' "$work/run.json" && fail "a run without streams has stream keys"

echo "ata-sim CLI: all cases as expected"
