// SPDX-License-Identifier: Apache-2.0
// Which launcher started this process, and what it told us: rank, size, where the
// rendezvous server is, and the job's secret.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hvd/hvd.h"

namespace hvd::bootstrap {

struct LaunchInfo {
    std::string launcher;  // "hvdrun", "openmpi", "pmi", "slurm", "torchrun"
    int32_t rank = -1;
    int32_t size = 0;
    int32_t local_rank = -1;  // as the launcher says; -1 unknown (recomputed from host names)
    int32_t local_size = 0;   // 0 unknown
    std::string rdv_addr;     // empty: single-host rendezvous through a file
                              // (rendezvous_file.h)
    int32_t rdv_port = 0;     // 1..65535 when rdv_addr is set, else 0
    std::string secret;       // job secret (HVD_SECRET, or derived); empty when secret_from_file
    bool secret_derived = false;    // true: anyone who knows job id and address can compute it
                                    // (only with HVD_ALLOW_UNAUTHENTICATED=1)
    bool secret_from_file = false;  // true: rank 0 makes a random secret and publishes it, with
                                    // its server's address and port, in the private rendezvous
                                    // file named by job_id (rendezvous_file.h)
    std::string job_id;  // stable per job, names the rendezvous file; when rdv_addr is set and
                         // the launcher gives none, "rdv-<addr>:<port>"
    bool spans_hosts = false;   // the launcher says the job runs on more than one host (a
                                // local size below the size; srun: SLURM_STEP_NUM_NODES > 1)
    bool rdv_via_pmix = false;  // true: rank 0 hands its server's address, port and secret
                                // (HVD_SECRET, else a random one; `secret` holds HVD_SECRET or
                                // "") to the others through the launcher's PMIx server
                                // (pmix_exchange.h); unless spans_hosts, the ranks meet
                                // through the file instead where PMIx cannot be loaded
    int32_t pmi_fd = -1;        // >= 0: the same through the launcher's PMI-1 server on this socket
                                // (PMI_FD, from MPICH's Hydra; pmi1_exchange.h)
};

using EnvLookup = std::function<const char *(const char *name)>;

// Reads the launcher variables through `env` (nullptr or "" mean unset). Every HVD_X below may
// also be given as HOROVOD_X (HVD_X wins).
//
// Rank and size, first match wins (a launcher whose rank is set but not its size, or the
// reverse, is an error):
//   hvdrun / user   HVD_RANK, HVD_SIZE, HVD_LOCAL_RANK, HVD_LOCAL_SIZE
//   Open MPI        OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   MPICH / Hydra   PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
//   Slurm (srun)    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (the local size is the size
//                   where SLURM_STEP_NUM_NODES is 1)
//   torchrun style  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
// Rendezvous address: HVD_RENDEZVOUS_ADDR + HVD_RENDEZVOUS_PORT; else MASTER_ADDR +
// MASTER_PORT, using port MASTER_PORT + 1 because torchrun's (and torch.distributed's) own
// TCPStore already listens on MASTER_PORT; else, for a job that may span hosts (size > 1 and
// the launcher's local size unknown or below the size) that Open MPI or Slurm started with a
// PMIx server (PMIX_NAMESPACE set, PMIX_RANK equal to the rank), rdv_via_pmix; else none:
// single-host file rendezvous (with HVD_SECRET when given), or an error where the launcher's
// local size says the job spans hosts. Under MPICH's Hydra (PMI_RANK with PMI_FD, which
// names the socket to its process manager) a job without a rendezvous address always meets
// through that manager (pmi_fd), on one host or several: Hydra gives no job id (its PMI_PORT
// model, which names no rank, is read through uses_pmi_port below). An srun step on
// several nodes without either takes the step's first node (SLURM_STEP_NODELIST, where srun puts
// task 0) and the first port Slurm reserved for it (SLURM_STEP_RESV_PORTS) when Slurm gives both.
// Job id (first set): HVD_JOB_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE,
// SLURM_JOB_ID + "." + SLURM_STEP_ID, PMI_KVSNAME, TORCHELASTIC_RUN_ID. Required when there
// is no rendezvous address (it names the rendezvous file).
// Secret: HVD_SECRET; else, when the job is known to be on one host (no rendezvous address,
// or the launcher's local size equals the size), secret_from_file: rank 0 makes a random one
// and hands it over through the private rendezvous file; else, with
// HVD_ALLOW_UNAUTHENTICATED=1, SHA-256 (hex) of job id and rendezvous address
// (secret_derived), which anyone who knows the job can compute; else an error naming
// HVD_SECRET. No message names the secret's value.
//
// Returns HVD_OK and fills *out, or HVD_ERR_INVALID_ARG with a readable *err (naming the
// variable) when no launcher is found, a value is malformed (non-numeric, rank outside
// [0,size), size < 1, port outside 1..65535) or neither a rendezvous address nor a job id is
// known, or the job may span hosts without a secret. *out is written only on success; err may
// be nullptr.
hvd_status_t detect_launch(const EnvLookup &env, LaunchInfo *out, std::string *err);

// Whether MPICH Hydra's PMI_PORT model started this process (mpiexec -pmi-port): PMI_PORT and
// PMI_ID are set and no launcher's rank variable (listed above) is. Its rank and size are then
// the process manager's to tell (connect_pmi1_port, pmi1_exchange.h); given to detect_launch
// as PMI_RANK, PMI_SIZE and PMI_FD, the job meets as under PMI_FD.
bool uses_pmi_port(const EnvLookup &env);

// The process environment as an EnvLookup ("" counts as unset).
EnvLookup process_env();

// A worker of an elastic job (hvdrun --min-np/--max-np): its membership service and id.
struct ElasticLaunch {
    std::string addr;
    int32_t port = 0;
    int64_t worker_id = 0;
    int64_t timeout_ms = 0;  // how long hvd_init waits for its round
    std::string secret;
};

// *elastic = whether HVD_ELASTIC_ADDR is set; then HVD_ELASTIC_PORT, HVD_WORKER_ID and
// HVD_SECRET must be too (HVD_ELASTIC_TIMEOUT is optional). HVD_ERR_INVALID_ARG with *err
// naming the variable when one is missing or malformed. *out is written only on success.
hvd_status_t detect_elastic(const EnvLookup &env, bool *elastic, ElasticLaunch *out,
                            std::string *err);

// `base` with `vars` (name, value) in front of it: what detect_launch reads for a worker
// given its rank, size and rendezvous by a membership round.
EnvLookup with_overrides(EnvLookup base, std::vector<std::pair<std::string, std::string>> vars);

}  // namespace hvd::bootstrap
