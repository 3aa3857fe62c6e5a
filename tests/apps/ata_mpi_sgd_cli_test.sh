#!/usr/bin/env bash
# ata-mpi-sgd under mpirun -n 4: a small run writes the JSON of every strategy, pull included;
# a bad command line or a worker count that is not mpirun's gives one clear line and a
# non-zero exit, without hanging the ranks.
set -euo pipefail
mpirun="$1"
program="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
run() { "$mpirun" -n 4 --oversubscribe "$program" "$@"; }

run --scenario linear --unit-us 5 --rounds 30 --json "$work/out.json" >"$work/out.txt" 2>&1 ||
  fail "small run failed: $(cat "$work/out.txt")"
grep -q '"workers": 3' "$work/out.json" || fail "JSON lacks the 3 worker ranks"
for s in gta ofta uta pull ata ata-e ata-auto; do
  grep -q "\"name\": \"$s\"" "$work/out.json" || fail "JSON lacks strategy $s"
done

expect_error() {
  local what="$1"
  shift
  if run "$@" >"$work/err.txt" 2>&1; then fail "'$*' succeeded"; fi
  grep -q "ata-mpi-sgd: error: .*$what" "$work/err.txt" || fail "'$*' did not say '$what': $(cat "$work/err.txt")"
}
expect_error "--workers: 5, but mpirun started 3 worker ranks" --workers 5
expect_error "--batch" --batch 0
expect_error "unknown scenario 'nope'" --scenario nope
expect_error "--lanes, --cpus, --work-factors, --calibration-tasks and --scenario none do not apply to MPI ranks" --lanes asio
expect_error "do not apply to MPI ranks" --cpus 0,0,1
expect_error "--trace: not for worker ranks" --trace "$work/trace.json"
echo "ata-mpi-sgd CLI: ok"
