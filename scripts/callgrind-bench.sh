#!/usr/bin/env bash
# Instruction counts (valgrind callgrind) of ksim's hot paths: stable on noisy machines, so a
# change can be compared before/after by counts rather than seconds.
#
#   scripts/callgrind-bench.sh            # prints a Markdown table
#
# Counted regions (callgrind --toggle-collect), release build:
#   cycle/<kind>: every `Algorithm::schedule_pod` of `ksim bench` over 1,000 pods on 5,000 nodes
#                 (the whole scheduling cycle: PreFilter, Filter with sampling, PreScore, Score,
#                 select), per kind of `ksim gen bench`;
#   replay:       `Simulation::run` of `ksim bench --replay --nodes 10000 --pods 3000`
#                 (engine events plus their cycles).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
cargo build --release -q -p ksim-cli
K=target/release/ksim
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
count() { # out-file, toggle, args...
  local out=$1 toggle=$2; shift 2
  valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
    --toggle-collect="$toggle" "$K" "$@" >/dev/null 2>"$out.log"
  grep -o 'Collected : [0-9]*' "$out.log" | awk '{print $3}'
}
echo "| region | instructions | per pod |"
echo "|---|---:|---:|"
for kind in plain mixed affinity node-affinity; do
  "$K" gen bench --kind "$kind" --nodes 5000 --pods 1000 --out "$T/$kind.json" >/dev/null
  n=$(count "$T/$kind.cg" 'ksim_scheduler::schedule::Algorithm::schedule_pod*' bench "$T/$kind.json")
  printf '| cycle/%s (5,000 nodes, 1,000 pods) | %s | %s |\n' "$kind" "$n" "$((n / 1000))"
done
n=$(count "$T/replay.cg" 'ksim_engine::sim::Simulation::run' bench --replay --nodes 10000 --pods 3000)
printf '| replay (10,000 nodes, 3,000 pods, 12,002 events) | %s | %s |\n' "$n" "$((n / 3000))"
