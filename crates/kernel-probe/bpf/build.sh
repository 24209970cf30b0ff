#!/usr/bin/env bash
# Rebuilds the committed eBPF object from its source, deterministically:
# relative paths and fixed flags, so two builds with the same clang give
# identical bytes and CI can compare the committed object with a fresh one.
#
#   crates/kernel-probe/bpf/build.sh            # rewrites stackscope.bpf.o
#   crates/kernel-probe/bpf/build.sh OUT.o      # writes OUT.o instead
#
# Needs clang (Debian 12: apt-get install clang, clang 14).
set -euo pipefail
out=$(realpath -m "${1:-$(dirname "$0")/stackscope.bpf.o}")
cd "$(dirname "$0")"
# -g keeps the BTF that CO-RE relocations and the loader need;
# -fdebug-prefix-map and -fno-ident keep the build directory and the
# compiler's banner out of the object.
clang -target bpf -O2 -g -Wall -Werror \
  -fdebug-prefix-map="$PWD"=. -fno-ident \
  -c stackscope.bpf.c -o "$out"
