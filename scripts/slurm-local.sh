#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, from Debian packages, to try profiles/slurm for real:
#   sudo scripts/slurm-local.sh start     # installs if needed, writes configs, starts munged, slurmctld, slurmd
#   sudo scripts/slurm-local.sh stop
# No slurmdbd: use `--slurm-status-command squeue` (sacct needs accounting storage). The node
# advertises one fake GPU (gres backed by /dev/null) so GPU requests are scheduled end to end.
set -euo pipefail
CONF_DIR=/etc/slurm

install_packages() {
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      slurm-wlm slurmctld slurmd slurm-client munge >/dev/null
  fi
}

write_config() {
  local cpus mem
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) * 3 / 4 ))
  mkdir -p "$CONF_DIR" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
  chown munge:munge /run/munge
  cat > "$CONF_DIR/slurm.conf" <<CONF
ClusterName=dyafdb-local
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
MinJobAge=3600
MpiDefault=none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
  echo "NodeName=localhost Name=gpu File=/dev/null" > "$CONF_DIR/gres.conf"
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey -c
    chown munge:munge /etc/munge/munge.key
  fi
}

start() {
  install_packages
  write_config
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
  pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
  pgrep -x slurmd >/dev/null || /usr/sbin/slurmd -N localhost
  for _ in $(seq 1 60); do
    sinfo -h -o %t 2>/dev/null | grep -q idle && break
    sleep 1
  done
  sinfo
  srun -t 1 true
  echo "slurm-local: cluster up (partition debug, $(nproc) CPUs, 1 fake GPU)"
}

stop() {
  for f in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
    if [ -s "$f" ]; then kill "$(cat "$f")" 2>/dev/null || true; fi
  done
}

"${1:-start}"
