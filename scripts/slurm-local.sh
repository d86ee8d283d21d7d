#!/usr/bin/env bash
# A single-node SLURM cluster on this machine that behaves like a real site, from Debian packages:
#   sudo scripts/slurm-local.sh start     # installs if needed, writes configs, starts the daemons
#   sudo scripts/slurm-local.sh stop
# Accounting is real: slurmdbd stores it in MariaDB and slurmctld enforces associations. Partitions
# `cpu` (default) and `gpu` admit only jobs charged to account `dyafdb-ci` (the site variables below),
# so a job without that account is rejected, as at a site where users' default accounts cannot
# submit. The node advertises two fake GPUs of type `fake` (gres backed by /dev/null and /dev/zero)
# so GPU requests are scheduled end to end. After `start`, run the workflow with:
#   export DYAFDB_SLURM_PARTITION=cpu DYAFDB_SLURM_GPU_PARTITION=gpu DYAFDB_SLURM_ACCOUNT=dyafdb-ci DYAFDB_SLURM_GPU_MODEL=fake
set -euo pipefail
CONF_DIR=/etc/slurm
CLUSTER=dyafdb-local
ACCOUNT=dyafdb-ci
DB_PASS=dyafdb-ci-only   # a throwaway database on a throwaway machine, reachable on loopback only

install_packages() {
  if ! command -v slurmctld >/dev/null || ! command -v slurmdbd >/dev/null || ! command -v munged >/dev/null \
      || ! command -v mariadbd >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      slurm-wlm slurmctld slurmd slurm-client slurmdbd munge mariadb-server >/dev/null
  fi
}

write_config() {
  local cpus mem
  # The node advertises at least 12 CPUs and 64 GB, the size of a small GPU node, so that an engine
  # node group (one engine per model plus one CPU and the bridge's memory per conversation, asked for
  # as one SLURM job: 10 CPUs and 34 GB for a group of 8) fits on a 2-core CI machine; slurmd takes the configured size
  # (SlurmdParameters=config_overrides) and nothing here enforces it (no cgroups, no memory polling).
  cpus=$(( $(nproc) > 12 ? $(nproc) : 12 ))
  mem=$(( $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) * 3 / 4 ))
  mem=$(( mem > 64000 ? mem : 64000 ))
  mkdir -p "$CONF_DIR" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /run/mysqld
  chown munge:munge /run/munge
  chown mysql:mysql /run/mysqld
  cat > "$CONF_DIR/slurm.conf" <<CONF
ClusterName=$CLUSTER
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
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations
AccountingStoreFlags=job_comment
AccountingStorageTRES=gres/gpu,gres/gpu:fake
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=3600
EnforcePartLimits=ALL
MpiDefault=none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:fake:2 State=UNKNOWN
PartitionName=cpu Nodes=localhost Default=YES MaxTime=INFINITE State=UP AllowAccounts=$ACCOUNT
PartitionName=gpu Nodes=localhost MaxTime=INFINITE State=UP AllowAccounts=$ACCOUNT
CONF
  cat > "$CONF_DIR/gres.conf" <<CONF
NodeName=localhost Name=gpu Type=fake File=/dev/null
NodeName=localhost Name=gpu Type=fake File=/dev/zero
CONF
  cat > "$CONF_DIR/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=$DB_PASS
CONF
  chmod 600 "$CONF_DIR/slurmdbd.conf"
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey -c
    chown munge:munge /etc/munge/munge.key
  fi
}

wait_for() {  # wait_for <what> <seconds> <command...>
  local what=$1 secs=$2
  shift 2
  for _ in $(seq 1 "$secs"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "slurm-local: $what did not come up in ${secs} s" >&2
  tail -n 20 /var/log/slurm/*.log >&2 || true
  return 1
}

start_database() {
  if ! pgrep -x mariadbd >/dev/null; then
    # No systemd here: the server runs as a plain background daemon, on loopback and its socket.
    runuser -u mysql -- /usr/sbin/mariadbd --datadir=/var/lib/mysql --socket=/run/mysqld/mysqld.sock \
      --pid-file=/run/mysqld/mysqld.pid --bind-address=127.0.0.1 >/var/log/slurm/mariadb.log 2>&1 &
  fi
  wait_for mariadb 60 mariadb -e 'SELECT 1'
  mariadb <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL
}

add_associations() {
  # The cluster, one account and the submitting user in it (the user keeps the `root` account as
  # default, which no partition admits: a job must name the account).
  sacctmgr -i add cluster "$CLUSTER" >/dev/null 2>&1 || true
  sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description="DyaFDB CI" Organization=dyafdb >/dev/null 2>&1 || true
  sacctmgr -i add user "$(id -un)" Account="$ACCOUNT" Cluster="$CLUSTER" >/dev/null 2>&1 || true
  sacctmgr -n -P list associations cluster="$CLUSTER" account="$ACCOUNT" format=account,user | grep -q "$(id -un)"
}

start() {
  install_packages
  write_config
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
  start_database
  pgrep -x slurmdbd >/dev/null || /usr/sbin/slurmdbd
  wait_for slurmdbd 60 sacctmgr -n list cluster
  add_associations
  pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld
  pgrep -x slurmd >/dev/null || /usr/sbin/slurmd -N localhost
  wait_for "an idle node" 60 sh -c 'sinfo -h -o %t | grep -q idle'
  sinfo
  srun -A "$ACCOUNT" -t 1 true
  # slurmctld hands a finished job to slurmdbd a moment later: "up" includes accounting that lists it,
  # since ci-slurm.sh takes the last job id from sacct (it once read an empty list here and stopped).
  wait_for "the probe job in sacct" 60 sh -c "sacct -X -n -P -o JobID -S now-1days | grep -qE '^[0-9]+\$'"
  echo "slurm-local: cluster up (partitions cpu and gpu for account $ACCOUNT, $(sinfo -h -o %c) CPUs on $(nproc) cores, 2 fake GPUs, accounting enforced)"
}

stop() {
  local f pids=()
  for f in /run/slurmd.pid /run/slurmctld.pid /run/slurmdbd.pid /run/mysqld/mysqld.pid /run/munge/munged.pid; do
    if [ -s "$f" ]; then pids+=("$(cat "$f")"); kill "${pids[-1]}" 2>/dev/null || true; fi
  done
  # Until they are gone: a start right after a stop found a daemon still shutting down, took it for
  # running, and waited in vain for slurmdbd.
  local pid alive
  for _ in $(seq 1 30); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 1
  done
}

"${1:-start}"
