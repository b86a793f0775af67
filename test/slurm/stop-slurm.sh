#!/usr/bin/env bash
# Ends what start-slurm.sh DIR started.
dir=$1
for daemon in slurmd slurmctld munged; do
  [ -f "$dir/$daemon.pid" ] && kill "$(cat "$dir/$daemon.pid")" 2>/dev/null || true
done
[ -f "$dir/sockets" ] && rm -rf "$(cat "$dir/sockets")"
exit 0
