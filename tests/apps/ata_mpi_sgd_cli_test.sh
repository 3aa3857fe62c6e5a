#!/usr/bin/env bash
# ata-mpi-sgd under mpirun -n 4: a small run writes the JSON of every strategy, pull included,
# and a hedged one runs; --help answers on one rank; a bad command line or a worker count that is not mpirun's gives one clear line and a
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

# --backups hedges the allocated strategies over the ranks too (each task answered as it ends).
run --scenario linear --unit-us 5 --rounds 30 --backups on --strategies ofta,ata \
  --json "$work/hedged.json" >"$work/out.txt" 2>&1 || fail "--backups on: $(cat "$work/out.txt")"
grep -q '"backups": "on"' "$work/hedged.json" || fail "JSON lacks the backups"

# --help answers on one rank too, with this program's own description.
"$mpirun" -n 1 "$program" --help >"$work/help.txt" 2>&1 || fail "--help on one rank: $(cat "$work/help.txt")"
grep -q "^ata-mpi-sgd: minibatch SGD over MPI ranks" "$work/help.txt" || fail "--help: $(head -3 "$work/help.txt")"
grep -q -- "--strategies" "$work/help.txt" || fail "--help lacks the flags"

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
expect_error "--backups" --backups sometimes

# --trace: the rank scheduler's observer keeps the first and last rounds, as on threads. Each
# traced round has its B accepted tasks, each once, on a worker rank's track, and a flow each.
run --scenario linear --unit-us 5 --rounds 30 --target-gap 1e-9 --strategies ofta,ata-e \
  --trace-rounds 4 --trace "$work/trace.json" >"$work/out.txt" 2>&1 || fail "trace run: $(cat "$work/out.txt")"
grep -qE "^wrote $work/trace.json: 3 strategies x 8 rounds, [0-9]+ task slices" "$work/out.txt" ||
  fail "trace: $(grep wrote "$work/out.txt")"
python3 - "$work/trace.json" <<'PY' || fail "trace: not as the rounds ran"
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
accepted = collections.Counter()
flows = collections.Counter(e["ph"] for e in events if e["ph"] in "sf")
slices = 0
for e in events:
    if e["ph"] != "X" or e["cat"] == "round":
        continue
    slices += 1
    assert 0 <= e["tid"] < 3, e
    if e["cat"] == "accepted":
        accepted[(e["pid"], e["args"]["round"], e["args"]["task"])] += 1
rounds = {(pid, r) for pid, r, _ in accepted}
assert len(rounds) == 3 * 8, rounds
assert sorted(accepted.values()) == [1] * (3 * 8 * 23), "an accepted task twice"
assert flows["s"] == flows["f"] == slices, flows
PY
echo "ata-mpi-sgd CLI: ok"
