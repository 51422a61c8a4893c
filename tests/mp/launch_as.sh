#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# launch_as.sh STYLE NP PROGRAM [ARGS...]
# Starts NP copies of PROGRAM the way another launcher would, with only that launcher's
# environment variables (no HVD_* ones), and passes when every copy exits 0 within 120 s.
#   openmpi   : the real `mpirun` of Open MPI
#   openmpi_secret : the real `mpirun` with HVD_SECRET exported to the ranks (mpirun -x), as
#               the README tells users to; one host, so the ranks meet through the file
#   openmpi_hosts : the same as openmpi, but each rank told it is alone on its host (local
#               size 1, a host name of its own), as when mpirun spreads a job over hosts:
#               no rendezvous address, so the ranks meet through mpirun's PMIx server
#   torchrun  : RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
#   torchrun_hosts : the same, but each rank told it is alone on its host (LOCAL_WORLD_SIZE=1),
#               as when torchrun spreads a job over hosts
#   slurm     : SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_ID, SLURM_STEP_ID
#   pmi       : PMI_RANK, PMI_SIZE (MPICH/Hydra) plus HVD_JOB_ID
#   hydra     : the real `mpiexec.hydra` of MPICH: no job id, so the ranks meet through its
#               PMI-1 server (PMI_FD)
#   hydra_hosts : the same, but each rank told it is alone on its host (MPI_LOCALNRANKS=1, a
#               host name of its own), as when mpiexec spreads a job over hosts
#   hydra_missing : hydra_hosts, but the last rank exits at once without calling hvd_init
#   hydra_bad_fd : hydra_hosts, but PMI_FD names no open file
#   hydra_port : `mpiexec.hydra -pmi-port`: no PMI_FD, PMI_RANK or PMI_SIZE, only PMI_PORT and
#               PMI_ID; the process manager tells each rank who it is
#   hydra_port_hosts : the same, each rank told it is alone on its host
set -u
style=$1 np=$2
shift 2
unset HVD_RANK HVD_SIZE HVD_RENDEZVOUS_ADDR HVD_RENDEZVOUS_PORT HVD_SECRET HVD_JOB_ID \
      HVD_ALLOW_UNAUTHENTICATED

if [ "$style" = openmpi ]; then
  command -v mpirun >/dev/null || { echo "launch_as: mpirun not installed" >&2; exit 1; }
  exec timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "$@"
fi
if [ "$style" = openmpi_secret ]; then
  command -v mpirun >/dev/null || { echo "launch_as: mpirun not installed" >&2; exit 1; }
  HVD_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') exec timeout 120 \
    mpirun --allow-run-as-root --oversubscribe -np "$np" -x HVD_SECRET "$@"
fi
if [ "$style" = openmpi_hosts ]; then
  command -v mpirun >/dev/null || { echo "launch_as: mpirun not installed" >&2; exit 1; }
  exec timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" sh -c \
    'OMPI_COMM_WORLD_LOCAL_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 \
     HVD_HOSTNAME="host-$OMPI_COMM_WORLD_RANK" exec "$@"' sh "$@"
fi
case $style in
  hydra|hydra_hosts|hydra_missing|hydra_bad_fd|hydra_port|hydra_port_hosts)
    command -v mpiexec.hydra >/dev/null ||
      { echo "launch_as: mpiexec.hydra not installed" >&2; exit 1; }
    # The ranks' own setup, run by each rank before the program (MISSING: a rank that exits).
    case $style in
      hydra) setup='' ;;
      hydra_hosts) setup='export MPI_LOCALNRANKS=1 MPI_LOCALRANKID=0 HVD_HOSTNAME=host-$PMI_RANK' ;;
      hydra_missing) setup='export MPI_LOCALNRANKS=1 MPI_LOCALRANKID=0 HVD_HOSTNAME=host-$PMI_RANK
                            [ "$PMI_RANK" -eq $((PMI_SIZE - 1)) ] && exit 0' ;;
      hydra_bad_fd) setup='export MPI_LOCALNRANKS=1 MPI_LOCALRANKID=0 HVD_HOSTNAME=host-$PMI_RANK
                           export PMI_FD=999' ;;
      hydra_port) setup='[ -z "${PMI_RANK:-}${PMI_FD:-}" ] && [ -n "$PMI_PORT" ] || exit 3' ;;
      hydra_port_hosts) setup='[ -z "${PMI_RANK:-}${PMI_FD:-}" ] && [ -n "$PMI_PORT" ] || exit 3
                               export MPI_LOCALNRANKS=1 MPI_LOCALRANKID=0 HVD_HOSTNAME=host-$PMI_ID' ;;
    esac
    port=()
    case $style in hydra_port*) port=(-pmi-port) ;; esac
    exec timeout 120 mpiexec.hydra "${port[@]}" -n "$np" sh -c "$setup"'
      exec "$@"' sh "$@" ;;
esac

free_port() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/../../scripts/free_port.py"
}
job="launch-as-$$-$RANDOM"
port=$(free_port)
pids=()
for ((r = 0; r < np; r++)); do
  case $style in
    torchrun) env RANK=$r WORLD_SIZE=$np LOCAL_RANK=$r LOCAL_WORLD_SIZE=$np \
                  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" & ;;
    torchrun_hosts) env RANK=$r WORLD_SIZE=$np LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
                  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" & ;;
    slurm)    env SLURM_PROCID=$r SLURM_NTASKS=$np SLURM_LOCALID=$r SLURM_JOB_ID=$job \
                  SLURM_STEP_ID=0 "$@" & ;;
    pmi)      env PMI_RANK=$r PMI_SIZE=$np HVD_JOB_ID=$job "$@" & ;;
    *) echo "launch_as: unknown style $style" >&2; exit 2 ;;
  esac
  pids+=($!)
done
status=0
deadline=$((SECONDS + 120))
for pid in "${pids[@]}"; do
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "launch_as: rank pid $pid still running after 120 s" >&2
    kill -9 "${pids[@]}" 2>/dev/null
    exit 1
  fi
  wait "$pid" || status=1
done
[ $status -eq 0 ] && echo "launch_as: $style np=$np ok"
exit $status
