#!/usr/bin/env bash
# Renders a run's report.html in headless Chromium and saves a screenshot, to look at the page
# as a person would. Needs Debian's chromium (apt-get install -y chromium); not part of CI.
#   scripts/screenshot-report.sh results/quickstart [out.png]
# KSIM_SHOT_HEIGHT=4800 takes a taller page (default 2400 pixels).
set -euo pipefail
dir=${1:?usage: $0 RUN_DIR [OUT_PNG]}
out=${2:-$dir/report-screenshot.png}
command -v chromium >/dev/null || { echo "chromium not found: apt-get install -y chromium" >&2; exit 2; }
[ -f "$dir/report.html" ] || { echo "$dir/report.html not found" >&2; exit 2; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1280,"${KSIM_SHOT_HEIGHT:-2400}" \
  --screenshot="$(realpath -m "$out")" "file://$(realpath "$dir/report.html")" >/dev/null 2>&1
echo "screenshot written to $out"
