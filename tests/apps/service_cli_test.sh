#!/usr/bin/env bash
# ata-serve and ata-load command lines: bad input gives one clear line and a non-zero exit; a
# short ata-load run against a real ata-serve gets every request answered, and SIGTERM stops the
# server with exit code 0.
set -euo pipefail
serve="$1"
load="$2"
source "$(dirname "$0")/cli_expectations.sh"

program="$serve"
expect_error "--port" --port 70000
expect_error "--load-aware" --load-aware maybe
expect_error "--backups: backups must be off, copies or on, got 'maybe'" --backups maybe
expect_error "--binding: early not in {arrival,late}" --binding early
expect_error "--binding late: not with --backups or --load-aware" --binding late --backups on
expect_error "--binding late: not with --backups or --load-aware" --binding late --backups off
expect_error "--binding late: not with --backups or --load-aware" --binding late --load-aware off
expect_error "--cpus: CPU 999 is not one this process may use" --cpus 999
expect_error "--cpus: 2 CPUs for 16 workers; give one CPU per worker" --cpus 0,0
expect_error "unknown strategy 'fast'" --strategy fast
expect_error "--trace '$work': is a folder, not a file" --trace "$work"
expect_error "--trace-rounds: must be a whole number from 1 to 10000, got '0'" --trace-rounds 0
expect_error "unknown scenario 'nope'" --scenario nope
expect_error "--listen 'here' is not an IP address" --listen here
expect_error "--max-samples must be at most 100000, got 100001" --max-samples 100001
expect_error "--threads" --threads 0
expect_error "--work-price: must be a number >= 0, got '-1'" --work-price -1
expect_error "--work-price: must be a number >= 0, got 'nan'" --work-price nan

program="$load"
expect_error "must be a loopback address" --host 192.0.2.1 --port 8080
expect_error "must be a loopback address" --host example.org --port 8080
expect_error "--port is required" --rate 5
expect_error "--samples-max must be >= --samples (8), got 4" --port 8080 --samples 8 --samples-max 4
expect_error "--rate" --port 8080 --rate 0
expect_error "--sweep" --sweep --port 8080
expect_error "'pull:maybe': expected NAME, NAME:on or NAME:off (load awareness), or NAME:late" --sweep --strategies pull:maybe
expect_error "unknown strategy 'fast'" --sweep --strategies fast
expect_error "--loads entries must be in (0, 100], got -1" --sweep --loads 0.5,-1

"$serve" --port 0 --scenario linear --workers 4 --unit-us 20 --binding late >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n '1s/^ata-serve: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/serve.out")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { kill "$pid"; fail "ata-serve printed no port: $(cat "$work/serve.out" "$work/serve.err")"; }
"$load" --port "$port" --rate 50 --requests 30 --duration 10 --samples 4 --samples-max 12 \
  --json "$work/load.json" >"$work/load.out"
grep -q "answered 30, errors 0" "$work/load.out" || fail "not every request answered: $(cat "$work/load.out")"
grep -qF '"p99"' "$work/load.json" || fail "the JSON summary lacks p99"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 0 ] || fail "ata-serve exited with $status after SIGTERM"
grep -q "stopped after 30 responses" "$work/serve.out" || fail "ata-serve did not report its responses"
echo "ata-serve and ata-load CLI: all cases as expected"
