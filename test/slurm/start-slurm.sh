#!/usr/bin/env bash
# Starts a private, single-machine Slurm for the tests of `search --slurm` (a ctest fixture): munged,
# slurmctld and slurmd with their own key, sockets, ports, state and logs under DIR, one partition of
# this machine. Nothing outside DIR is touched; stop-slurm.sh DIR ends it. Where slurm-wlm or munge
# is not installed it says so and leaves no slurm.conf, and the tests skip.
set -euo pipefail
dir=$1
rm -rf "$dir" && mkdir -p "$dir"/{state,spool,log}
for tool in munged slurmctld slurmd sbatch squeue sinfo; do
  if ! command -v "$tool" >/dev/null; then
    echo "warning: $tool not found (slurm-wlm and munge come from .ci/install-deps): search --slurm tests skip"
    exit 0
  fi
done
# A Unix socket path must stay under ~108 bytes, which a deep build folder may not.
sockets=$(mktemp -d /tmp/clustersim-slurm.XXXXXX)
echo "$sockets" > "$dir/sockets"
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge.key"
munged --key-file="$dir/munge.key" --socket="$sockets/munge" --pid-file="$dir/munged.pid" \
       --log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed" --force
host=$(hostname -s)
# Ports from the shell's PID so that two checkouts testing at once do not meet.
port=$((20000 + ($$ % 20000) * 2))
cat > "$dir/slurm.conf" <<CONF
ClusterName=clustersimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$sockets/munge
CredType=cred/munge
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 1 100); do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then
    sinfo
    exit 0
  fi
  sleep 0.2
done
echo "error: the test Slurm did not come up within 20 s; its logs:" >&2
tail -n 20 "$dir"/log/*.log >&2
exit 1
