#!/usr/bin/env bash
# Browser test of report.html's pod explorer in a real headless Chromium (Debian's chromium,
# driven by playwright-core): lists every pod, filters, sorts, clicks a pod and checks its
# attempts and per-node filter verdicts appear; saves a screenshot of the explorer.
#   scripts/browser-test-report.sh [RUN_DIR] [OUT_PNG]
# Without RUN_DIR it builds ksim and makes a small run with pending pods and --explain all.
# Installs chromium (apt-get) and playwright-core (npm, into target/browser-test) if missing;
# skips (exit 0, with a message) only when chromium cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null; then
  echo "chromium not found: installing Debian's chromium" >&2
  if ! { [ "$(id -u)" = 0 ] && apt-get install -y chromium >/dev/null 2>&1; } &&
     ! { [ "$(id -u)" = 0 ] && apt-get update >/dev/null 2>&1 && apt-get install -y chromium >/dev/null 2>&1; }; then
    echo "SKIP: chromium is not installed and could not be installed (needs root and Debian's package archive)" >&2
    exit 0
  fi
fi
command -v node >/dev/null || { echo "node not found: apt-get install -y nodejs npm" >&2; exit 2; }
pw=target/browser-test
if [ ! -d "$pw/node_modules/playwright-core" ]; then
  mkdir -p "$pw"
  (cd "$pw" && npm install --no-audit --no-fund --silent playwright-core@1 >/dev/null) ||
    { echo "npm install playwright-core failed" >&2; exit 2; }
fi
dir=${1:-}
if [ -z "$dir" ]; then
  cargo build -q -p ksim-cli
  dir=target/browser-test/run
  scen=target/browser-test/scenario.yaml
  # 3 nodes of 4 cpu; 16 one-cpu pods that never end: 12 schedule, 4 stay pending.
  cat > "$scen" <<'YAML'
name: browser-test
seed: 1
horizon: 2m
cluster:
  pools:
    - name: workers
      count: 3
      template:
        status:
          capacity: {cpu: "4", memory: 16Gi, pods: "110"}
workload:
  generators:
    - name: steady
      arrival: {interval: 1s}
      count: 16
      shapes:
        - {requests: {cpu: "1", memory: 1Gi}}
YAML
  ./target/debug/ksim run "$scen" --out "$dir" --explain all --quiet
fi
out=${2:-$dir/explorer-screenshot.png}
KSIM_PW_DIR="$(realpath "$pw")/node_modules" node scripts/browser-test-report.mjs "$dir" "$out"
