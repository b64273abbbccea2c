#!/usr/bin/env bash
# Coverage-guided fuzzing of one parser: scripts/fuzz.sh TARGET SECONDS [JOBS]
#   TARGET: native csv scenario nodes config quantity sweep import (or "all": each in turn)
# Installs cargo-fuzz if missing. The machine has one stable toolchain, so libFuzzer's
# sanitizer flags are allowed with RUSTC_BOOTSTRAP=1 (nothing else uses it). New inputs go to
# fuzz/work/TARGET (git-ignored); the curated seeds in fuzz/corpus/TARGET are read only. A
# crash is saved under fuzz/artifacts/TARGET/: copy it into fuzz/regressions/TARGET/ and add
# a named test, then fix it.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/fuzz.sh TARGET SECONDS}"
seconds="${2:?usage: scripts/fuzz.sh TARGET SECONDS}"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
targets=("$target")
if [ "$target" = all ]; then
  targets=(native csv scenario nodes config quantity sweep import)
fi
for t in "${targets[@]}"; do
  mkdir -p "fuzz/work/$t"
  echo "== fuzzing $t for ${seconds}s"
  (cd fuzz && cargo fuzz run "$t" "work/$t" "corpus/$t" -- \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
done
