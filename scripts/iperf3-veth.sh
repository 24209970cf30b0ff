#!/usr/bin/env bash
# Debian's iperf3 client against the reference stack and against the
# kernel's iperf3 server on one path: a veth pair between two network
# namespaces this script makes and removes (MTU 1500, IPv4). Each round
# runs, back to back:
#   kernel iperf3 -s   on the server end (the kernel's own stack)
#   stackscope host    on the same veth end over AF_PACKET (its iperf3
#                      server on 5201), the end's kernel addresses flushed
# and the table gives the receiver's throughput (end.sum_received), mean
# ± sample stdev over the rounds (interleaved, so drift hits both alike).
#
# Usage (root): scripts/iperf3-veth.sh [ROUNDS] [SECONDS]
#   ROUNDS  rounds (default 3); SECONDS  iperf3 -t (default 5).
#   STACKSCOPE=path overrides the binary (default
#   target/release/stackscope, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
bin=${STACKSCOPE:-target/release/stackscope}
if [[ ! -x $bin ]]; then
  cargo build --release -q -p stackscope
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "iperf3-veth.sh: needs root (network namespaces, AF_PACKET)" >&2
  exit 1
fi
a=ipv$$a b=ipv$$b
out=$(mktemp -d)
host_pid=
cleanup() {
  [[ -n $host_pid ]] && kill -INT "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
ip netns add "$a"
ip netns add "$b"
ip link add va$$ netns "$a" type veth peer name vb$$ netns "$b"
ip -n "$a" addr add 192.0.2.1/24 dev va$$
ip -n "$a" link set va$$ up
ip -n "$b" link set vb$$ up
kernel_addr() { ip -n "$b" addr add 192.0.2.2/24 dev vb$$; }
for round in $(seq 1 "$rounds"); do
  echo "round $round/$rounds" >&2
  # The kernel's server.
  kernel_addr
  ip netns exec "$b" iperf3 -s -1 -D -I "$out/iperf3.pid"
  sleep 0.3
  ip netns exec "$a" iperf3 -c 192.0.2.2 -t "$secs" -J > "$out/kernel-$round.json"
  sleep 0.3
  ip -n "$b" addr flush dev vb$$
  ip -n "$a" neigh flush dev va$$
  # The reference stack on the same veth end.
  "$bin" host --netns "$b" --packet vb$$ --addr 192.0.2.2/24 --dad-transmits 0 \
    > "$out/host-$round.log" 2>&1 &
  host_pid=$!
  for _ in $(seq 50); do
    grep -q '^ready' "$out/host-$round.log" && break
    sleep 0.1
  done
  ip netns exec "$a" iperf3 -c 192.0.2.2 -t "$secs" -J > "$out/ref-$round.json"
  kill -INT "$host_pid"
  wait "$host_pid" || true
  host_pid=
  ip -n "$a" neigh flush dev va$$
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'server':<28} {'Mbit/s mean':>12} {'stdev':>8} {'runs (Mbit/s)'}")
for key, name in [("kernel", "kernel iperf3 -s"), ("ref", "stackscope host (reference)")]:
    rates = []
    for r in range(1, rounds + 1):
        d = json.load(open(f"{out}/{key}-{r}.json"))
        rates.append(d["end"]["sum_received"]["bits_per_second"] / 1e6)
    sd = statistics.stdev(rates) if len(rates) > 1 else 0.0
    print(f"{name:<28} {statistics.mean(rates):12.0f} {sd:8.0f} {' '.join(f'{x:.0f}' for x in rates)}")
PY
