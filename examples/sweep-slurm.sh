#!/bin/bash
# Run a ksim sweep as a Slurm job array: task k runs `ksim sweep --shard k/N` into a shared
# directory; a dependent job merges the shards into sweep.csv and the plots.
#
#   sbatch examples/sweep-slurm.sh                          # 8 shards (--array=0-7 below)
#   sbatch --array=0-15 examples/sweep-slurm.sh             # 16 shards
#   SWEEP=scenarios/openb-small-sweep.yaml RESULTS=/shared/openb sbatch examples/sweep-slurm.sh
#   SHARDS=8 sbatch --array=5 examples/sweep-slurm.sh       # run shard 5 of 8 again
#
# Shards count from 0, as `ksim sweep --shard I/N` does: submit the array as --array=0-(N-1)
# so that SLURM_ARRAY_TASK_ID is the shard index I and the array's size is N. To re-run some
# shards only, give SHARDS=N (the size of the whole sweep) with --array listing those indices.
# A `%K` throttle (--array=0-15%4) is fine: it limits the tasks running at once, not N.
#
# sbatch exports the submitting shell's environment (SWEEP, RESULTS, SHARDS, PATH) to the
# tasks. Needs `ksim` on the PATH of the compute nodes, and the working directory (relative
# SWEEP and RESULTS are read from it) on a filesystem they all share.
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

I=${SLURM_ARRAY_TASK_ID}
N=${SHARDS:-${SLURM_ARRAY_TASK_COUNT}}
ok=1
if [ -z "${SHARDS:-}" ]; then
    [ "${SLURM_ARRAY_TASK_MIN}" = 0 ] && [ "${SLURM_ARRAY_TASK_MAX}" = $((N - 1)) ] || ok=0
fi
[ "$I" -lt "$N" ] || ok=0
if [ "$ok" = 0 ]; then
    echo "task $I of array ${SLURM_ARRAY_TASK_MIN}-${SLURM_ARRAY_TASK_MAX} (N=$N): shards" \
        "count from 0; submit with --array=0-(N-1), or give SHARDS=N" >&2
    exit 2
fi
echo "ksim sweep $SWEEP --shard $I/$N --out $RESULTS on $(hostname)"
ksim sweep "$SWEEP" --shard "$I/$N" --out "$RESULTS" --jobs "${SLURM_CPUS_PER_TASK:-1}"

# The lowest task submits the merge, to run once every task of the array has succeeded
# (afterok on an array job waits for all of its tasks).
if [ "$I" = "${SLURM_ARRAY_TASK_MIN}" ]; then
    sbatch --dependency="afterok:${SLURM_ARRAY_JOB_ID}" --job-name=ksim-merge \
        --output="ksim-merge-%j.out" --wrap="ksim merge '$RESULTS'" ||
        echo "could not submit the merge; run: ksim merge $RESULTS" >&2
fi
