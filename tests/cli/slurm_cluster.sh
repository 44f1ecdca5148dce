#!/usr/bin/env bash
# A one-node Slurm cluster in a directory, for the real-Slurm tests (sweep, zoom;
# tests/support/slurm_cluster.h): munged, slurmctld and slurmd started in the background (no
# systemd) from a generated slurm.conf, on free ports.
#   slurm_cluster.sh start DIR   -> starts them; prints SLURM_CONF=DIR/slurm.conf once sinfo shows
#                                   the node idle (exit 1 with the daemons' logs after 60 s)
#   slurm_cluster.sh stop DIR    -> stops whatever of them runs (always exit 0)
set -uo pipefail
cmd=$1
dir=$(cd "$2" && pwd)

# Every process with a file open under DIR (step daemons of this cluster included), by pid.
pids_in_dir() {
  for p in /proc/[0-9]*; do
    ls -l "$p/fd" 2>/dev/null | grep -q -- "-> $dir/" && echo "${p#/proc/}"
  done
}

stop() {
  if [ -f "$dir/slurmctld.pid" ] && [ -f "$dir/slurm.conf" ]; then
    SLURM_CONF="$dir/slurm.conf" scancel --quiet --user=root 2>/dev/null
    for _ in $(seq 30); do  # step daemons leave once their job is cancelled
      ls "$dir/spool" 2>/dev/null | grep -q "^$(hostname -s)_" || break
      sleep 0.5
    done
  fi
  for f in slurmd slurmctld munged; do
    if [ -f "$dir/$f.pid" ]; then
      pid=$(cat "$dir/$f.pid")
      kill "$pid" 2>/dev/null
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null
      rm -f "$dir/$f.pid"
    fi
  done
  for pid in $(pids_in_dir); do [ "$pid" != $$ ] && [ "$pid" != "$PPID" ] && kill -9 "$pid" 2>/dev/null; done
  return 0
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

for b in munged slurmctld slurmd sinfo sbatch; do
  command -v "$b" >/dev/null || { echo "$b not found: run scripts/setup_slurm.sh" >&2; exit 1; }
done
host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" \
  || { echo "munged did not start" >&2; cat "$dir/munged.log" >&2; exit 1; }

port=$((20000 + RANDOM % 20000))
cat >"$dir/slurm.conf" <<CONF
ClusterName=driftscope-test
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
ReturnToService=2
MinJobAge=5
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -D -i >"$dir/slurmctld.out" 2>&1 &
echo $! >"$dir/slurmctld.pid"
slurmd -D -N "$host" >"$dir/slurmd.out" 2>&1 &
echo $! >"$dir/slurmd.pid"
for _ in $(seq 120); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -1)
  if [ "$state" = idle ]; then echo "SLURM_CONF=$SLURM_CONF"; exit 0; fi
  sleep 0.5
done
echo "the Slurm node did not become idle (state '${state:-none}')" >&2
tail -n 20 "$dir"/*.log "$dir"/*.out >&2
stop
exit 1
