#!/usr/bin/env bash
# End-to-end check of examples/sweep-slurm.sh on a real, throwaway Slurm cluster on this machine:
#
#   scripts/slurm-test.sh          (or `just slurm-test`; needs root: apt-get, daemons as root)
#
# 1. installs Slurm and MUNGE from Debian's packages if missing (slurm-wlm, munge);
# 2. starts munged, slurmctld and slurmd in the foreground of this script, on this host, with a
#    minimal slurm.conf (one node: this machine's CPUs and memory as `slurmd -C` sees them; one
#    partition; proctrack/linuxproc and task/none, so no cgroups or systemd are needed), every
#    state, log and socket under one temporary folder, on ports 16817/16818 (not Slurm's
#    defaults, so a real Slurm on the machine is left alone);
# 3. builds ksim (release), submits examples/sweep-slurm.sh as a job array of 3 shards of
#    scenarios/openb-small-sweep.yaml (--array=0-2: task k runs `ksim sweep --shard k/3`),
#    waits for the array and the merge job its first task submits;
# 4. checks that the merge job's sweep.csv and a `ksim merge` of the shards both equal, byte for
#    byte, the sweep.csv of the unsharded `ksim sweep`;
# 5. cancels anything left, stops the three daemons and removes the temporary folder, on success
#    and on failure alike (trap).
#
# Environment: SLURM_TEST_TIMEOUT (seconds to wait for the jobs, default 900), KEEP=1 (keep the
# temporary folder, for its logs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SHARDS=3
SWEEP=scenarios/openb-small-sweep.yaml
TIMEOUT=${SLURM_TEST_TIMEOUT:-900}
start=$(date +%s)

say() { printf '== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }
fail() { echo "slurm-test: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (installs packages, runs the Slurm daemons as root)"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
   ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

T=$(mktemp -d /tmp/ksim-slurm.XXXXXX)
chmod 700 "$T"
PIDS=()
cleanup() {
  local rc=$?
  set +e
  if [ -n "${SLURM_CONF:-}" ] && [ -n "${CTLD_PID:-}" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
    # Jobs first: their steps (slurmstepd) outlive slurmd otherwise.
    scancel --full --user=root >/dev/null 2>&1
    for _ in $(seq 1 20); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 1
    done
    # Each job step's slurmstepd removes its socket (NODE_JOB.STEP) from the spool as it ends.
    for _ in $(seq 1 50); do
      compgen -G "$T/spool/slurmd-*/*_[0-9]*.[0-9]*" >/dev/null || break
      sleep 0.2
    done
  fi
  # Daemons in reverse start order, by the ids this script got when it started them.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill "${PIDS[$i]}" 2>/dev/null
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [ "$rc" != 0 ]; then
    for log in slurmctld.log slurmctld.err slurmd.log slurmd.err munged.log munged.err; do
      [ -f "$T/$log" ] && { echo "--- last lines of $log" >&2; tail -n 15 "$T/$log" >&2; }
    done
    for out in "$T"/work/*.out; do
      [ -f "$out" ] && { echo "--- $out" >&2; tail -n 15 "$out" >&2; }
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $T" >&2; else rm -rf "$T"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building ksim (release)"
cargo build --release -q -p ksim-cli
export PATH="$ROOT/target/release:$PATH"

# --- MUNGE: a fresh key, its own socket ----------------------------------------------------
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/work"
chmod 700 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
SOCK="$T/munge/munge.socket"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$SOCK" \
  --pid-file="$T/munge/munged.pid" --seed-file="$T/munge/munged.seed" \
  --log-file="$T/munged.log" >"$T/munged.err" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || fail "munged did not start"
munge -n -S "$SOCK" | unmunge -S "$SOCK" >/dev/null || fail "munge cannot decode its own credential"

# --- Slurm: one node, this machine --------------------------------------------------------
HOST=$(hostname -s)
# "NodeName=h CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=.. RealMemory=.."
NODE=$(slurmd -C | head -n 1)
case "$NODE" in NodeName=*) ;; *) fail "slurmd -C printed no node line: $NODE" ;; esac
export SLURM_CONF="$T/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=ksimtest
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/slurmd-%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
$NODE State=UNKNOWN
PartitionName=ksim Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
say "starting slurmctld and slurmd ($NODE)"
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.err" 2>&1 &
CTLD_PID=$!
PIDS+=("$CTLD_PID")
for _ in $(seq 1 100); do scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done
scontrol ping | grep -q UP || fail "slurmctld did not come up"
slurmd -D -f "$SLURM_CONF" >"$T/slurmd.err" 2>&1 &
PIDS+=($!)
state=
for _ in $(seq 1 60); do
  state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || fail "node $HOST is '$state', not idle"

# --- the sweep, as a job array ------------------------------------------------------------
# One CPU per task so two shards run at once on a 2-core machine; the rest of the #SBATCH
# header of the example stays as it is.
say "submitting examples/sweep-slurm.sh as --array=0-$((SHARDS - 1))"
RESULTS="$T/work/sharded"
jobid=$(SWEEP="$ROOT/$SWEEP" RESULTS="$RESULTS" sbatch --parsable --chdir="$T/work" \
  --array=0-$((SHARDS - 1)) --cpus-per-task=1 --mem=1G "$ROOT/examples/sweep-slurm.sh")
jobid=${jobid%%;*}
echo "array job $jobid"

say "unsharded reference sweep (meanwhile)"
ksim sweep "$SWEEP" --out "$T/whole" --jobs 1 --quiet

say "waiting for the array and its merge job (timeout ${TIMEOUT}s)"
deadline=$(($(date +%s) + TIMEOUT))
while [ -n "$(squeue -h -o %i)" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { squeue; fail "jobs still queued after ${TIMEOUT}s"; }
  sleep 2
done
# Every job the test caused (array tasks and the merge), with its final state.
scontrol -o show job >"$T/jobs.txt" || true
bad=$(grep -v 'JobState=COMPLETED' "$T/jobs.txt" | grep -o 'JobId=[0-9]* .*JobName=[^ ]*' | cut -d' ' -f1 || true)
ntasks=$(grep -c "ArrayJobId=$jobid " "$T/jobs.txt" || true)
nmerge=$(grep -c 'JobName=ksim-merge ' "$T/jobs.txt" || true)
grep -o 'JobId=[0-9]* \(ArrayJobId=[0-9]* ArrayTaskId=[0-9]* \)\?JobName=[^ ]*\|JobState=[A-Z_]*\|ExitCode=[0-9:]*' \
  "$T/jobs.txt" | paste -d' ' - - - || true
[ -z "$bad" ] || fail "jobs did not complete: $bad"
[ "$ntasks" = "$SHARDS" ] || fail "expected $SHARDS array tasks, saw $ntasks"
[ "$nmerge" = 1 ] || fail "expected the merge job submitted by task 0, saw $nmerge"

for ((k = 0; k < SHARDS; k++)); do
  [ -f "$RESULTS/shard-$k-of-$SHARDS.json" ] || fail "shard $k left no shard-$k-of-$SHARDS.json"
done
say "merging the shards with ksim merge"
ksim merge "$RESULTS" --out "$T/merged" --quiet

cmp "$T/whole/sweep.csv" "$T/merged/sweep.csv" || fail "ksim merge of the shards differs from the unsharded sweep.csv"
cmp "$T/whole/sweep.csv" "$RESULTS/sweep.csv" || fail "the merge job's sweep.csv differs from the unsharded sweep.csv"
rows=$(($(wc -l <"$T/whole/sweep.csv") - 1))
say "PASS: $SHARDS shards on Slurm merged into the unsharded sweep.csv, byte for byte ($rows runs, sha256 $(sha256sum "$T/whole/sweep.csv" | cut -c1-16))"
