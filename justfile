# The project's everyday commands (`just --list`). Install just with `pip install rust-just`
# (a prebuilt binary, seconds) or `cargo install just --locked` (compiles it, minutes).
# Every recipe is one of the commands the README gives, so plain cargo works as well.

set shell := ["bash", "-euo", "pipefail", "-c"]

# `just` alone lists the recipes
_default:
    @just --list

# The quickstart: run scenarios/quickstart.yaml, reports in results/quickstart/
run:
    cargo run --release -p ksim-cli -- run scenarios/quickstart.yaml

# Every test, exactly as the README and .ci/run run them
test:
    cargo test --workspace

# Recorded kube-scheduler conformance cases (decision and timeline) in DIRS, all by default
conformance +DIRS="tests/conformance/cases tests/conformance/timelines/cases":
    cargo build --release -p ksim-conformance --example run_cases
    ./target/release/examples/run_cases {{DIRS}}

# Reference workloads of README "Performance" (KIND: plain mixed affinity node-affinity)
bench KIND="plain mixed" NODES="5000" PODS="10000":
    cargo build --release -p ksim-cli
    mkdir -p target/bench
    for kind in {{KIND}}; do \
      ./target/release/ksim gen bench --kind "$kind" --nodes {{NODES}} --pods {{PODS}} --out "target/bench/$kind.json"; \
      ./target/release/ksim bench "target/bench/$kind.json" --repeat 3; \
    done

# Upstream's scheduler_perf workloads (README "Performance"): suite.csv and suite.md in OUT
bench-suite OUT="results/suite" *ARGS:
    cargo build --release -p ksim-cli
    ./target/release/ksim bench --suite scheduler-perf --out {{OUT}} {{ARGS}}

# Scaling curve and whole-run replay of README "Performance" (OUT=docs/perf refreshes the docs)
bench-scaling OUT="results/perf":
    cargo build --release -p ksim-cli
    ./target/release/ksim bench --scaling --out {{OUT}}
    ./target/release/ksim bench --replay --nodes 10000 --pods 1000000

# Instruction counts of the hot paths (valgrind callgrind), a Markdown table
perf-record:
    scripts/callgrind-bench.sh

# The FGD paper's experiment, full matrix (about 45 min on 2 cores); ARGS go to `ksim fgd`
fgd OUT="/tmp/fgd-full" *ARGS:
    cargo build --release -p ksim-cli
    if [ -x /usr/bin/time ]; then /usr/bin/time -v ./target/release/ksim fgd --out {{OUT}} {{ARGS}}; \
    else time ./target/release/ksim fgd --out {{OUT}} {{ARGS}}; fi

# Coverage-guided fuzzing of one parser (TARGET: native csv scenario nodes config quantity sweep import all)
fuzz TARGET SECONDS:
    scripts/fuzz.sh {{TARGET}} {{SECONDS}}

# Screenshot of a run's report.html in headless Chromium (apt-get install -y chromium)
screenshot DIR="results/quickstart" *OUT:
    scripts/screenshot-report.sh {{DIR}} {{OUT}}

# Browser test of report.html's pod explorer in headless Chromium (installs chromium and playwright-core if missing)
browser-test DIR="" *OUT:
    scripts/browser-test-report.sh {{DIR}} {{OUT}}

# Formatting and clippy, as required before every commit
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings

# examples/sweep-slurm.sh on a throwaway single-host Slurm cluster (root; installs slurm-wlm, munge)
slurm-test:
    scripts/slurm-test.sh
