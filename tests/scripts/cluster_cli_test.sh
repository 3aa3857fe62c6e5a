#!/usr/bin/env bash
# scripts/cluster refuses bad input by name (exit 2), says why when the machine cannot (exit
# 77), and leaves nothing behind after a run: its namespaces, links and state are gone.
set -euo pipefail
cluster="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect CODE MESSAGE ARGS...: exit code CODE and MESSAGE on stderr
  local code=$1 message=$2 got out
  shift 2
  set +e
  out=$(bash "$cluster" "$@" 2>&1 >/dev/null)
  got=$?
  set -e
  [ "$got" -eq "$code" ] || fail "'$*': exit $got, expected $code ($out)"
  grep -qF -- "$message" <<<"$out" || fail "'$*': expected '$message' in: $out"
}
expect 2 "expected the number of hosts K" run 0 -- true
expect 2 "--name: expected 1 to 6 of [a-z0-9]" run --name BAD_NAME 2 -- true
expect 2 "--rate: expected a tc rate" run --rate fast 2 -- true
expect 2 "--rate-of 5=1mbit: no rank 5 among 2 hosts" run --rate-of 5=1mbit 2 -- true
expect 2 "--burst: expected bytes >= 1600" run --burst 10 2 -- true
expect 2 "run: expected K -- COMMAND" run 2
expect 2 "which cluster?" throttle 1 off
expect 2 "no cluster named zz9" link --name zz9 1 down
if [ "$(id -u)" -ne 0 ]; then
  expect 77 "needs root" check
  echo "not root: checked the refusal only"
  exit 0
fi
if command -v setpriv >/dev/null; then
  set +e
  out=$(setpriv --reuid 65534 --regid 65534 --clear-groups bash "$cluster" run 2 -- true 2>&1)
  got=$?
  set -e
  [ "$got" -eq 77 ] && grep -qF "needs root" <<<"$out" || fail "as uid 65534: exit $got ($out)"
fi
set +e
bash "$cluster" check >/dev/null 2>&1
can=$?
set -e
[ "$can" -eq 0 ] || { echo "this machine cannot build clusters (exit $can): refusals checked"; exit 0; }
# A run sees its cluster: its hosts, its links, a rate where asked; the command's exit code is
# the run's; nothing of it is left after.
out=$(bash "$cluster" run --name cli1 --rate-of 1=2mbit 2 -- bash -c \
  'ip netns list | grep -c "^ata-$ATA_CLUSTER-[01] "; tc -n ata-$ATA_CLUSTER-1 qdisc show dev eth0;
   "$ATA_CLUSTER_SCRIPT" link 1 down; "$ATA_CLUSTER_SCRIPT" link 1 up; exit 3' 2>/dev/null) && code=0 || code=$?
[ "$code" -eq 3 ] || fail "run: exit $code, expected the command's 3"
grep -qx 2 <<<"$out" || fail "run: expected 2 namespaces, got: $out"
grep -q "tbf.*rate 2Mbit" <<<"$out" || fail "run: expected rank 1's link at 2mbit, got: $out"
! ip netns list | grep -q "^ata-cli1-" || fail "namespaces of cli1 left behind"
! ip link show atb-cli1 >/dev/null 2>&1 || fail "bridge of cli1 left behind"
[ ! -e /run/ata-cluster/cli1 ] || fail "state of cli1 left behind"
echo "scripts/cluster: refusals, a run and its teardown checked"
