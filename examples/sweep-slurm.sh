#!/bin/bash
# Run a ksim sweep as a Slurm job array: task k runs `ksim sweep --shard k/N` into a shared
# directory; a dependent job merges the shards into sweep.csv and the plots.
#
#   sbatch examples/sweep-slurm.sh                      # submits the array and the merge
#
# Needs `ksim` on the PATH of the compute nodes and RESULTS on a filesystem they all share.
#SBATCH --job-name=ksim-sweep
#SBATCH --array=0-7
#SBATCH --cpus-per-task=2
#SBATCH --mem=4G
#SBATCH --time=06:00:00
#SBATCH --output=ksim-sweep-%A_%a.out
set -euo pipefail

SWEEP=${SWEEP:-scenarios/quickstart-sweep.yaml}
RESULTS=${RESULTS:-results/quickstart-sweep}

if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
    echo "submit with sbatch (this script is a job array)" >&2
    exit 2
fi

# N is the size of the array, so the shards cover the sweep whatever --array says.
N=${SLURM_ARRAY_TASK_COUNT}
ksim sweep "$SWEEP" --shard "${SLURM_ARRAY_TASK_ID}/${N}" --out "$RESULTS" \
    --jobs "${SLURM_CPUS_PER_TASK:-1}"

# The first task submits the merge, to run once every task of the array has succeeded.
if [ "${SLURM_ARRAY_TASK_ID}" = "${SLURM_ARRAY_TASK_MIN:-0}" ]; then
    sbatch --dependency="afterok:${SLURM_ARRAY_JOB_ID}" --job-name=ksim-merge \
        --wrap="ksim merge '$RESULTS'" >/dev/null || true
fi
