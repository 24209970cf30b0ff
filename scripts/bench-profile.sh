#!/bin/bash
# Instruction and cache counts of the TCP bench's transfer loop, per MiB and
# per frame, for stackscope (gate closed, recording at the layers level) and
# smoltcp 0.12 on the same work: exact figures that machine load does not
# move (issue 22). Needs valgrind.
#
#   scripts/bench-profile.sh [MIB] [--cache]
#
# MIB (default 20) is moved by each run; --cache adds callgrind's cache and
# branch simulation (L1 instruction and data misses per frame). A frame is
# one of the 1 104 segments (735 data, 369 ACK) each stack sends per MiB.
set -euo pipefail
cd "$(dirname "$0")/.."

mib=20
cache=()
for arg in "$@"; do
  case "$arg" in
    --cache) cache=(--cache-sim=yes --branch-sim=yes) ;;
    ''|*[!0-9]*) echo "usage: $0 [MIB] [--cache]" >&2; exit 2 ;;
    *) mib=$arg ;;
  esac
done
command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 1; }

bench=$(cargo bench -p stackscope-stack --bench tcp --no-run 2>&1 |
  sed -n 's/.*Executable benches\/tcp.rs (\(.*\))/\1/p' | tail -1)
[ -x "$bench" ] || { echo "could not build the TCP bench" >&2; exit 1; }
frames=$((mib * 1104))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # name, then environment
  local name=$1; shift
  env TCP_BENCH_PROFILE=1 TCP_BENCH_PROFILE_MIB="$mib" "$@" \
    valgrind --tool=callgrind "${cache[@]}" --callgrind-out-file="$out/$name" \
    --toggle-collect='tcp::profile_only::{{closure}}' "$bench" >"$out/$name.log" 2>&1
  awk -v name="$name" -v mib="$mib" -v frames="$frames" '
    /I +refs:/ { gsub(",", "", $NF); ir = $NF }
    /I1 +misses:/ { gsub(",", "", $NF); i1 = $NF }
    /D1 +misses:/ { gsub(",", "", $4); d1 = $4 }
    /Mispredicts:/ { gsub(",", "", $3); mp = $3 }
    END {
      printf "%-28s %6.2f M instr/MiB %7.0f instr/frame", name, ir / mib / 1e6, ir / frames
      if (i1 != "") printf "  %5.1f L1i  %5.1f L1d misses  %4.1f mispredicts per frame", i1 / frames, d1 / frames, mp / frames
      printf "\n"
    }' "$out/$name.log"
}

echo "TCP bench, $mib MiB per run, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
run "stackscope (gate closed)"
run "stackscope (recording)" TCP_BENCH_PROFILE_RECORD=1
run "smoltcp" TCP_BENCH_PROFILE_STACK=smoltcp
