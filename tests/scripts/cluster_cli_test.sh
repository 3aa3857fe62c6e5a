#!/usr/bin/env bash
# scripts/cluster refuses bad input by name (exit 2), says why when the machine cannot (exit
# 77), and leaves nothing behind after a run: its namespaces, links, relay and state are gone.
# With the relay's program (the second argument), its delay and loss are measured over UDP.
set -euo pipefail
cluster="$1"
relay="${2:-}"
# Cluster names of this run's own (c, 4 hex digits of its pid, a digit): tests of other build
# trees may be running clusters at the same time.
tag=c$(printf %04x $(($$ % 65536)))
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
expect 2 "--delay: expected milliseconds from 0 to 10000" run --delay -1 2 -- true
expect 2 "--delay: expected milliseconds from 0 to 10000 (e.g. 5 or 0.5), got 'soon'" \
  run --delay soon 2 -- true
expect 2 "--delay: expected milliseconds from 0 to 10000" run --delay 10001 2 -- true
expect 2 "--delay-of: expected R=MS" run --delay-of 5ms 2 -- true
expect 2 "--delay-of 2=1: no rank 2 among 2 hosts" run --delay-of 2=1 2 -- true
expect 2 "--loss: expected a probability in [0, 1)" run --loss 1 2 -- true
expect 2 "--loss: expected a probability in [0, 1)" run --loss 0.5% 2 -- true
expect 2 "--loss: expected a probability in [0, 1)" run --loss -0.1 2 -- true
expect 2 "--loss-of: expected R=P" run --loss-of 1=1.5 2 -- true
expect 2 "--loss-of 3=0.1: no rank 3 among 2 hosts" run --loss-of 3=0.1 2 -- true
expect 2 "--seed: expected a whole number" run --loss 0.1 --seed x 2 -- true
expect 2 "which cluster?" delay 1 5
expect 2 "no cluster named zz9" loss --name zz9 1 0.1
expect 2 "which cluster?" throttle 1 off
expect 2 "no cluster named zz9" link --name zz9 1 down
if [ "$(id -u)" -ne 0 ]; then
  expect 77 "needs root" check
  echo "not root: checked the refusal only"
  exit 0
fi
if command -v setpriv >/dev/null; then
  set +e
  # A readable copy, run from /: a clone under a private directory (mktemp -d makes it 0700)
  # is out of uid 65534's reach.
  copy=$(mktemp /tmp/ata-cluster-XXXXXX)
  cp "$cluster" "$copy" && chmod 644 "$copy"
  out=$(cd / && setpriv --reuid 65534 --regid 65534 --clear-groups bash "$copy" run 2 -- true 2>&1)
  got=$?
  rm -f "$copy"
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
out=$(bash "$cluster" run --name ${tag}1 --rate-of 1=2mbit 2 -- bash -c \
  'ip netns list | grep -c "^ata-$ATA_CLUSTER-[01] "; tc -n ata-$ATA_CLUSTER-1 qdisc show dev eth0;
   "$ATA_CLUSTER_SCRIPT" link 1 down; "$ATA_CLUSTER_SCRIPT" link 1 up; exit 3' 2>/dev/null) && code=0 || code=$?
[ "$code" -eq 3 ] || fail "run: exit $code, expected the command's 3"
grep -qx 2 <<<"$out" || fail "run: expected 2 namespaces, got: $out"
grep -q "tbf.*rate 2Mbit" <<<"$out" || fail "run: expected rank 1's link at 2mbit, got: $out"
! ip netns list | grep -q "^ata-${tag}1-" || fail "namespaces of ${tag}1 left behind"
! ip link show atb-${tag}1 >/dev/null 2>&1 || fail "bridge of ${tag}1 left behind"
[ ! -e /run/ata-cluster/${tag}1 ] || fail "state of ${tag}1 left behind"

# The relay: refused unbuilt; then a cluster's round trips and losses, measured by a UDP echo
# from rank 0 to rank 1 over the relay's addresses.
expect 2 "need the relay, and '/nonexistent' is not a program" \
  run --relay /nonexistent --delay 5 2 -- true
out=$(bash "$cluster" run --name ${tag}2 2 -- "$(dirname "$cluster")/cluster" delay 1 5 2>&1) &&
  fail "delay without a relay: exit 0 ($out)"
grep -qF "cluster ${tag}2 has no relay" <<<"$out" || fail "delay without a relay: $out"
if [ -z "$relay" ]; then
  echo "scripts/cluster: refusals, a run and its teardown checked (no relay built)"
  exit 0
fi
if [ ! -c /dev/net/tun ]; then
  expect 77 "no TUN devices" run --relay "$relay" --delay 1 2 -- true
  echo "scripts/cluster: refusals, a run and its teardown checked (no TUN devices here)"
  exit 0
fi
echo_py="$(dirname "$0")/udp_echo.py"
# probe COUNT GAP: "sent N received M min_ms X median_ms Y" from rank 0 to rank 1.
probe_script='
  ip netns exec "ata-$ATA_CLUSTER-1" python3 "$0" serve 0.0.0.0 7777 & server=$!
  trap "kill $server" EXIT
  sleep 0.5
  probe() { ip netns exec "ata-$ATA_CLUSTER-0" python3 "$0" probe \
              "10.214.$(cut -d. -f3 /run/ata-cluster/$ATA_CLUSTER/prefix).2" 7777 "$1" "$2"; }'
min_ms() { awk -v line="$1" 'BEGIN { split(line, f, " "); print f[6] }'; }
in_range() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x < hi) }'; }
# Rank 1's link at 5 ms each way: a round trip between it and rank 0 is 10 ms longer (the best
# of 40 probes within 2 ms above that: the delay is applied once, not per hop); then 0 and 2.5
# ms mid-run.
out=$(bash "$cluster" run --name ${tag}3 --relay "$relay" --delay-of 1=5 2 -- bash -c "$probe_script
  echo relay pid \$(cut -d\" \" -f1 /run/ata-cluster/\$ATA_CLUSTER/relay.pid)
  probe 40 0.02; \"\$ATA_CLUSTER_SCRIPT\" delay 1 0; probe 40 0.02
  \"\$ATA_CLUSTER_SCRIPT\" delay 1 2.5; probe 40 0.02
  \"\$ATA_CLUSTER_SCRIPT\" delay 1 soon || true
  \"\$ATA_CLUSTER_SCRIPT\" loss 1 1.5 || true
  \"\$ATA_CLUSTER_SCRIPT\" delay 2 1 || true" "$echo_py" 2>&1) || fail "delay run: $out"
for refusal in "delay: expected milliseconds from 0 to 10000 (e.g. 5 or 0.5), got 'soon' or off" \
               "loss: expected a probability in [0, 1) (e.g. 0.01), got '1.5' or off" \
               "no rank '2' in cluster ${tag}3 (2 hosts)"; do
  grep -qF -- "$refusal" <<<"$out" || fail "delay run: expected '$refusal' in: $out"
done
mapfile -t probes < <(grep '^sent ' <<<"$out")
[ ${#probes[@]} -eq 3 ] || fail "delay run: expected 3 probes in: $out"
in_range "$(min_ms "${probes[0]}")" 10 12 || fail "5 ms each way: ${probes[0]} ($out)"
in_range "$(min_ms "${probes[1]}")" 0 5 || fail "delay 0: ${probes[1]} ($out)"
in_range "$(min_ms "${probes[2]}")" 5 7 || fail "2.5 ms each way: ${probes[2]} ($out)"
grep -q "ata-cluster-relay: .* relayed, 0 dropped by loss" <<<"$out" || fail "relay's report: $out"
# 20% loss each way: about 64% of 300 echoes come back (4.5 standard deviations either side),
# the same ones for the same seed.
lossy() {
  bash "$cluster" run --name ${tag}4 --relay "$relay" --loss 0.2 --seed "$1" 2 -- \
    bash -c "$probe_script
  probe 300 0.005" "$echo_py" 2>&1 | grep '^sent ' || true
}
first=$(lossy 7)
again=$(lossy 7)
received=$(awk '{ print $4 }' <<<"$first")
in_range "$received" 155 230 || fail "20% loss each way: $first"
[ "$(awk '{ print $4 }' <<<"$again")" = "$received" ] ||
  fail "same seed, other losses: '$first' then '$again'"
! ip netns list | grep -q "^ata-$tag[34]-" || fail "namespaces of the relay's clusters left behind"
relay_pid=$(sed -n 's/^relay pid //p' <<<"$out")
[ -n "$relay_pid" ] || fail "delay run: no relay pid in: $out"
[ ! -e "/proc/$relay_pid" ] || [ "$(cat "/proc/$relay_pid/comm")" != ata-cluster-rel ] ||
  fail "the relay (pid $relay_pid) left running"
echo "scripts/cluster: refusals, a run, the relay's delay and loss and their teardown checked"
echo "  probes (5, 0, 2.5 ms each way): ${probes[*]}"
echo "  20% loss, seed 7, twice: $first; $again"
