#!/usr/bin/env bash
# Cross-stack TCP throughput on one kind of path: a veth pair between two
# network namespaces (made and removed by stackscope for every transfer),
# MTU 1500, IPv6. Each round runs, back to back:
#   kernel -> kernel     stackscope ttcp --pair --stack kernel --netns
#   kernel -> reference  stackscope ttcp --pair --stack ref --link packet
#   reference -> kernel  ... --ref-end sender
# and the table gives the received throughput, mean ± sample stdev over
# the rounds (interleaved, so drift hits all three alike).
#
# Usage (root): scripts/cross-stack.sh [ROUNDS] [BUFFERS]
#   ROUNDS  rounds (default 5); BUFFERS  8 KiB writes per transfer
#   (default 12800 = 100 MiB). STACKSCOPE=path overrides the binary
#   (default: target/release/stackscope, built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
buffers=${2:-12800}
bin=${STACKSCOPE:-target/release/stackscope}
if [[ ! -x $bin ]]; then
  cargo build --release -q -p stackscope
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "cross-stack.sh: needs root (network namespaces, AF_PACKET)" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(-6 -l 8192 -n "$buffers" --mtu 1500 --json)
for round in $(seq 1 "$rounds"); do
  echo "round $round/$rounds" >&2
  "$bin" ttcp --pair --stack kernel --netns "${common[@]}" > "$out/kk-$round.json"
  "$bin" ttcp --pair --stack ref --link packet --ref-end receiver "${common[@]}" > "$out/kr-$round.json"
  "$bin" ttcp --pair --stack ref --link packet --ref-end sender "${common[@]}" > "$out/rk-$round.json"
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
names = {"kk": "kernel -> kernel", "kr": "kernel -> reference", "rk": "reference -> kernel"}
print(f"{'direction':<22} {'Mbit/s mean':>12} {'stdev':>8} {'min':>8} {'max':>8}  retransmits  clean")
for key, name in names.items():
    rates, retrans, clean = [], 0, True
    for r in range(1, rounds + 1):
        report = json.load(open(f"{out}/{key}-{r}.json"))
        received = report["end"]["sum_received"]
        rates.append(received["bits_per_second"] / 1e6)
        retrans += report["end"]["sum_sent"].get("retransmits") or 0
        clean = clean and received.get("missing_bytes") == 0 and received.get("corrupted_bytes") == 0
    sd = statistics.stdev(rates) if len(rates) > 1 else 0.0
    print(f"{name:<22} {statistics.mean(rates):>12.0f} {sd:>8.0f} {min(rates):>8.0f} {max(rates):>8.0f}  {retrans:>11}  {clean}")
target = json.load(open(f"{out}/kr-1.json"))["start"]["target"]
print(f"machine: {target['cpus']} x {target['cpu_model']}; {target['kernel']}")
PY
