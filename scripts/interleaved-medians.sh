#!/usr/bin/env bash
# Interleaved medians of example loops that print "<x> ns/op" (w1_loop, mixed_loop).
#
# Usage: scripts/interleaved-medians.sh ROUNDS CMD1 ';;' CMD2 ';;' ...
# Runs CMD1, CMD2, ... in turn, ROUNDS times (so a noisy phase of the machine hits every
# command alike), and prints per command the median ns/op and every value, sorted. A
# command may start with environment assignments, e.g.
#   scripts/interleaved-medians.sh 9 RANGELOCK_W1_MEMSET=1 target/release/examples/w1_loop \
#     5000000 0 rangelock 1 ';;' RANGELOCK_W1_MEMSET=1 target/release/examples/w1_loop \
#     5000000 0 segments 1
set -euo pipefail
rounds=$1
shift
cmds=()
cur=""
for arg in "$@"; do
  if [ "$arg" = ";;" ]; then
    cmds+=("$cur")
    cur=""
  else
    cur="$cur $arg"
  fi
done
[ -n "$cur" ] && cmds+=("$cur")
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for _ in $(seq "$rounds"); do
  for i in "${!cmds[@]}"; do
    value=$(env ${cmds[$i]} 2>&1 | grep -oE '[0-9.]+ ns/op' | head -1 | cut -d' ' -f1)
    echo "$i ${value:-nan}" >>"$results"
  done
done
for i in "${!cmds[@]}"; do
  values=$(awk -v i="$i" '$1 == i { print $2 }' "$results" | sort -n)
  median=$(echo "$values" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "median $median ns/op |${cmds[$i]} | $(echo "$values" | tr '\n' ' ')"
done
