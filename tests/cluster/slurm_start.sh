# Sourced by the cluster tests: starts a private one-node Slurm (munged, slurmctld, slurmd) on
# localhost with a generated config under $SLURM_TEST_DIR, and stops it on exit. Nothing outside
# that folder is touched; daemons run as root (CI is root on Debian). Exits 77 (CTest: skipped)
# with the reason on stdout when Slurm cannot start here.
skip() { echo "SKIPPED: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "the Slurm daemons need root (CI runs as root): run ctest -L cluster as root"
for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol sacct; do
  command -v "$tool" >/dev/null 2>&1 || [ "$tool" = sacct ] ||
    skip "$tool not found: install Debian's slurm-wlm and munge (scripts/install-deps.sh does)"
done

: "${SLURM_TEST_DIR:?}"
mkdir -p "$SLURM_TEST_DIR"/{munge,state,spool,log}
chmod 700 "$SLURM_TEST_DIR/munge"
started_pids=()
slurm_stop() {
  for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${started_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap slurm_stop EXIT

# munged with its own key and socket (its default /run/munge is made too: some builds look there).
mkdir -p /run/munge
mungekey --create --keyfile="$SLURM_TEST_DIR/munge/munge.key" --force >/dev/null 2>&1 ||
  skip "mungekey could not create a key"
munge_socket="$SLURM_TEST_DIR/munge/munge.socket"
munged --force --foreground --socket="$munge_socket" --key-file="$SLURM_TEST_DIR/munge/munge.key" \
  --pid-file="$SLURM_TEST_DIR/munge/munged.pid" --log-file="$SLURM_TEST_DIR/log/munged.log" \
  --seed-file="$SLURM_TEST_DIR/munge/munged.seed" >/dev/null 2>&1 &
started_pids+=($!)
for _ in $(seq 50); do [ -S "$munge_socket" ] && break; sleep 0.1; done
[ -S "$munge_socket" ] || skip "munged did not start: $(tail -2 "$SLURM_TEST_DIR/log/munged.log" 2>/dev/null | tr '\n' ' ')"

node=$(hostname -s)
cpus=$(nproc)
port=$((20000 + $$ % 20000))
export SLURM_CONF="$SLURM_TEST_DIR/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=evotest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation=$SLURM_TEST_DIR/state
SlurmdSpoolDir=$SLURM_TEST_DIR/spool
SlurmctldPidFile=$SLURM_TEST_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_TEST_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_TEST_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_TEST_DIR/log/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=evotest Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld -D -i -f "$SLURM_CONF" >"$SLURM_TEST_DIR/log/slurmctld.out" 2>&1 &
started_pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$SLURM_TEST_DIR/log/slurmd.out" 2>&1 &
started_pids+=($!)
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || skip "Slurm did not come up (node state '${state:-none}'): $(tail -3 "$SLURM_TEST_DIR/log/slurmctld.log" "$SLURM_TEST_DIR/log/slurmd.log" 2>/dev/null | tr '\n' ' ' | cut -c1-400)"
echo "slurm: slurmctld and slurmd up on $node (ports $port-$((port + 1)), $cpus CPUs), config $SLURM_CONF"
