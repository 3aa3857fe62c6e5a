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
expect_error "--change-round: must be a whole number from 1 to 1000000, got '0'" --change-round 0
expect_error "race:M@F needs F" --strategies race:3@0
expect_error "race:M@F needs F" --strategies race:3@nan
expect_error "--work-price: must be a number >= 0, got '-1'" --work-price -1
expect_error "--work-price: must be a number >= 0, got 'inf'" --work-price inf
expect_error "unknown scenario 'nope'" --scenario nope
expect_error "--ata-auto-race: bogus not in {fungible,indexed,off}" --ata-auto-race bogus
expect_error "cannot read LIBSVM file '$work/missing.svm': No such file or directory" --data "$work/missing.svm"
printf '+1 1:0.5\n-1 0:1\n' >"$work/bad.svm"
expect_error "line 2: feature index 0" --data "$work/bad.svm"
if [ "$name" = ata-prox ]; then expect_error "no prox" --problem quadratic; fi

# Flags: decimal whole numbers that fit, every size within its limit.
expect_error "--workers: must be a whole number from 1 to 1024, got '5000'" --workers 5000
expect_error "--batch: must be a whole number from 1 to 1000000, got '1000000000'" --batch 1000000000
expect_error "--rounds: must be a whole number from 1 to 1000000, got '18446744073709551616'" --rounds 18446744073709551616
expect_error "--dim: must be a whole number from 1 to 134217728, got '18446744073709551616'" --dim 18446744073709551616
expect_error "--seed: must be a whole number >= 0, got '0x10'" --seed 0x10
expect_error "--unit-us: must be a number in [0.001, 1e+06], got '1e308'" --unit-us 1e308
expect_error "--data: must not be empty" --data ""
expect_error "--csv: must not be empty" --csv ""
expect_error "--strategies: empty item in ','" --strategies , --rounds 5
expect_error "more than the limit of 1 GiB (lower --rows or --cols)" --rows 100000000
expect_refused_before_run
if [ "$name" = ata-sgd ]; then
  expect_error "--batch 23 results of 100000000 numbers (--dim) per round need 17.1 GiB, more than the limit of 1 GiB" \
    --problem quadratic --dim 100000000
  expect_refused_before_run
fi

# Lanes, CPUs and work factors: one value per worker, each in range, every CPU usable. $cpu is
# the first CPU this test may use.
cpu=$(awk '/^Cpus_allowed_list/ { split($2, first, /[-,]/); print first[1] }' /proc/self/status)
expect_error "--lanes: unknown lane kind 'gpu'; expected threads, asio or tbb" --lanes gpu
expect_error "--cpus: item 2 must be a whole number from 0 to 1023, got 'one'" --cpus "$cpu,one"
expect_error "--cpus: CPU 1023 is not one this process may use" --cpus "$cpu,1023"
expect_error "--cpus: 3 values for 4 workers; give one per worker" --workers 4 --cpus "$cpu,$cpu,$cpu"
expect_error "--work-factors: item 1 must be a whole number from 1 to 1000, got '0'" --work-factors 0,1
expect_error "--work-factors: 3 values for 2 workers; give one per worker" --cpus "$cpu,$cpu" --work-factors 1,1,2
expect_error "--work-factors: needs --scenario none, not cifar" --work-factors 1,2 --scenario cifar
expect_error "--burn: --scenario none has no delays to burn" --scenario none --burn
echo '{"workers": [{"model": "exponential", "mean": 1, "count": 3}]}' >"$work/three-workers.json"
expect_error "--cpus: 2 values for the 3 workers of $work/three-workers.json; give one per worker" \
  --cpus "$cpu,$cpu" --scenario "$work/three-workers.json"
expect_refused_before_run

# The machine sets the speeds: a calibration pass measures OFTA's means, on every lane kind.
for lanes in threads asio tbb; do
  "$program" --problem least-squares --rows 200 --cols 5 --workers 2 --cpus "$cpu,$cpu" --work-factors 1,3 \
    --lanes "$lanes" --calibration-tasks 20 --rounds 400 --target-gap 0.2 --strategies ata-auto,pull \
    --json "$work/$lanes.json" >"$work/out"
  grep -qF "workers: lanes $lanes, 2 " "$work/out" || fail "$lanes: lanes not reported: $(head -n3 "$work/out")"
  grep -qF "pinned to CPUs $cpu,$cpu; work factors 1,3; no simulated delay" "$work/out" || fail "$lanes: $(head -n3 "$work/out")"
  grep -qF "calibrating: all 2 workers at once, 20 tasks each" "$work/out" || fail "$lanes: no calibration line"
  grep -qF "Mean task time per worker (us): calibrated" "$work/out" || fail "$lanes: no table of means"
  for key in "\"lanes\": \"$lanes\"" '"calibrated_means"' '"learned_means"' '"work_factors"'; do
    grep -qF "$key" "$work/$lanes.json" || fail "$lanes: JSON lacks $key"
  done
done

# Data files: sizes checked before allocating, folders and binary files explained.
printf '1 1:1\n-1 9223372036854775808:0.2\n' >"$work/huge-index.svm"
expect_error "LIBSVM $work/huge-index.svm: 2 rows x 9223372036854775808 features" --data "$work/huge-index.svm"
printf '1 1:1\n-1 20000:1\n' >"$work/wide.svm"  # 17 bytes
expect_error "20000 features (a 20000 x 20000 matrix to compute f*) need 2.98 GiB, more than the limit of 1 GiB" \
  --data "$work/wide.svm"
expect_refused_before_run
expect_error "cannot read LIBSVM file '$work': it is a folder" --data "$work"
head -c 300 "$program" >"$work/binary.svm"
expect_error "LIBSVM $work/binary.svm, line 1: bad label" --data "$work/binary.svm"

# The scenario: its worker count must agree with --workers, and fit in the threads allowed.
echo '{"workers": [{"model": "exponential", "mean": 1, "count": 3}]}' >"$work/three.json"
expect_error "--workers 4 disagrees with the 3 workers of $work/three.json" --scenario "$work/three.json" --workers 4
echo '{"workers": [{"model": "exponential", "mean": 1, "count": 2000}]}' >"$work/many.json"
expect_error "has 2000 workers, more than the 1024 threads" --scenario "$work/many.json"
echo '{"workers": [{"model": "constant", "value": 1, "outage": {"probability": 0.999999999, "timeout": 1}}]}' \
  >"$work/outage.json"
expect_error "outage probability must be in [0, 0.999], got 0.999999999" --scenario "$work/outage.json"

# Outputs are checked before the run.
expect_error "--json '$work': is a folder, not a file" --json "$work"
expect_refused_before_run
expect_error "--plot '$work/three.json': '$work/three.json' is not a folder" --plot "$work/three.json"
expect_refused_before_run
expect_error "--trace '$work': is a folder, not a file" --trace "$work"
expect_refused_before_run
expect_error "--trace-rounds: must be a whole number from 1 to 10000, got '0'" --trace-rounds 0

# --trace: the first and last N rounds of each strategy, as JSON a viewer opens, its size said.
"$program" --problem least-squares --rows 200 --cols 5 --workers 3 --unit-us 1 --rounds 30 --target-gap 1e-9 \
  --strategies uta,pull --trace-rounds 4 --trace "$work/trace.json" >"$work/out"
grep -qE "^wrote $work/trace.json: 4 strategies x 8 rounds, [0-9]+ task slices, [0-9]+ events, [0-9]+ bytes$" "$work/out" ||
  fail "trace: $(grep wrote "$work/out")"
python3 -m json.tool "$work/trace.json" >/dev/null || fail "trace: not JSON"

# Threads the system refuses (here: an address-space limit too small for their stacks) give a
# sentence, not "Resource temporarily unavailable" alone.
if ! sanitized; then
  if (ulimit -v 1000000; "$program" --workers 1024 --rounds 3 --strategies ata) >"$work/out" 2>"$work/err"; then
    fail "1024 threads started within 1 GB of address space"
  fi
  grep -qF "cannot start 1024 worker threads: Resource temporarily unavailable (use fewer workers)" "$work/err" ||
    fail "threads: $(cat "$work/err")"
fi

# Training that diverges stops with an error, not a table of nan.
if [ "$name" = ata-sgd ]; then
  expect_error "diverged at round" --problem least-squares --step 10 --workers 4 --unit-us 1 --rounds 500
  if grep -q nan "$work/out"; then fail "nan printed"; fi
fi

"$program" --data "$data" --scenario sqrt --workers 4 --unit-us 1 --batch 6 --rounds 3000 \
  --strategies ata-e,pull --work-price 0.25 --json "$work/run.json" >"$work/out"
grep -q "objective = time + p x worker time, p = 0.25)" "$work/out" || fail "objective line: $(cat "$work/out")"
grep -q "wrote $work/run.json" "$work/out" || fail "did not report the JSON path"
for key in '"strategies"' '"name": "ata-e"' '"name": "gta"' '"name": "ofta"' '"wall_time"' '"worker_time"' \
           '"final_loss"' '"reached_target": true' '"objective"' '"objective_vs_ofta": 1.0' \
           '"work_price": 0.25' '"work_price_default": false'; do
  grep -qF "$key" "$work/run.json" || fail "JSON lacks $key"
done
grep -qF '"ata_auto_race": "fungible"' "$work/run.json" || fail "JSON lacks ata_auto_race"

# ata-auto learns its plan, racing: on heavy tails (lognormal, cv 2.9) without the restart
# budgets that a fungible race on threads refuses (which failed the batch).
echo '{"workers": [{"model": "lognormal", "mu": 1.0, "sigma": 1.5, "count": 12}]}' >"$work/heavy.json"
"$program" --problem least-squares --rows 200 --cols 5 --scenario "$work/heavy.json" --unit-us 1 \
  --batch 12 --rounds 600 --target-gap 1e-9 --strategies ata-auto --json "$work/heavy-run.json" >"$work/out" ||
  fail "heavy tails: $(tail -n2 "$work/out")"
grep -qE "^ata-auto played: .*race:" "$work/out" || fail "heavy tails: ata-auto did not race: $(grep played "$work/out")"
grep -qF '"played_plans"' "$work/heavy-run.json" || fail "JSON lacks played_plans"
# The asynchronous streams: their flags checked before the run, their counts in the table and
# the JSON.
expect_error "--delay-threshold: required by the ringmaster strategies" --strategies ringmaster
expect_refused_before_run
expect_error "--stops: applies to the ringmaster strategies only" --stops off
expect_error "--delay-threshold 1000000000 points of 100 numbers (the model's last R versions) need" \
  --problem least-squares --cols 100 --rows 200 --strategies ringmaster --delay-threshold 1000000000
expect_refused_before_run
"$program" --problem least-squares --rows 200 --cols 5 --workers 4 --scenario sqrt --unit-us 1 --batch 6 \
  --rounds 3000 --target-gap 0.05 --delay-threshold 4 --stream-step 0.1 \
  --strategies ringmaster,ringmaster-ata,ringmaster-oracle --json "$work/stream.json" \
  --trace "$work/stream-trace.json" >"$work/out" || fail "streams: $(tail -n2 "$work/out")"
# The trace holds each stream's tasks on their workers' tracks, the stale ones marked.
python3 - "$work/stream-trace.json" <<'PY' || fail "stream trace: see above"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
streams = [e for e in events if e.get("ph") == "X" and e["name"].startswith("stream ")]
tasks = [e for e in events if e.get("ph") == "X" and "stream" in e.get("args", {}) and e["name"].startswith("task ")]
assert len(streams) == 3, f"{len(streams)} stream slices, not one per strategy"
assert tasks and all("version" in e["args"] and "delay" in e["args"] for e in tasks), "no stream task slices"
assert any("(stopped)" in e["name"] or "(rejected)" in e["name"] for e in tasks), "no stale task marked"
PY
grep -qF "Asynchronous streams (R = 4, stops on" "$work/out" || fail "no stream table: $(cat "$work/out")"
for key in '"name": "ringmaster-ata"' '"stream": true' '"stale_share"' '"gradients_applied"' \
           '"tasks_stopped"' '"delay_threshold": 4' '"stops": true' '"stream_step": 0.1'; do
  grep -qF "$key" "$work/stream.json" || fail "stream JSON lacks $key"
done
echo "$name CLI: all cases as expected"
