// Which launcher started this process, and what it told us: rank, size, where the
// rendezvous server is, and the job's secret.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "hvd/hvd.h"

namespace hvd::bootstrap {

struct LaunchInfo {
    std::string launcher;   // "hvdrun", "openmpi", "slurm", "pmi", "torchrun"
    int32_t rank = -1;
    int32_t size = 0;
    int32_t local_rank = -1;  // as the launcher says; -1 unknown (recomputed from host names)
    int32_t local_size = 0;   // 0 unknown
    std::string rdv_addr;     // empty: single-host rendezvous through a file (see rdv_file)
    int32_t rdv_port = 0;     // 0 with rdv_addr set: an error at detection
    std::string secret;       // job secret; may be derived from the job id when no launcher set one
    std::string job_id;       // stable per job, used to name the rendezvous file
};

using EnvLookup = std::function<const char *(const char *name)>;

// Reads the launcher variables through `env` (returns nullptr for unset). Precedence:
// HVD_RANK/HVD_SIZE (hvdrun or a user), then OMPI_COMM_WORLD_RANK/SIZE, then PMI_RANK/
// PMI_SIZE, then SLURM_PROCID/SLURM_NTASKS, then RANK/WORLD_SIZE (torchrun style).
// Rendezvous: HVD_RENDEZVOUS_ADDR/HVD_RENDEZVOUS_PORT, else MASTER_ADDR/MASTER_PORT; else none
// (file rendezvous, needs job_id: OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE, SLURM_JOB_ID +
// SLURM_STEP_ID, PMI_ID..., or HVD_JOB_ID). Secret: HVD_SECRET, else derived from job id and
// rendezvous address. Returns HVD_ERR_INVALID_ARG with a readable *err when no launcher is
// found or a value is malformed (rank outside [0,size), non-numeric, port out of range).
hvd_status_t detect_launch(const EnvLookup &env, LaunchInfo *out, std::string *err);

// The process environment as an EnvLookup ("" counts as unset).
EnvLookup process_env();

}  // namespace hvd::bootstrap
