// SPDX-License-Identifier: Apache-2.0
#include "config/settings.h"

#include <cstdint>

#include "hvd/hvd.h"

namespace hvd::config {

namespace {

constexpr double kInt32Max = 2147483647.0;
// hvd_config_set's limits: a day of cycle time or stall time, 1 TiB of fusion buffer.
constexpr double kDaySeconds = 86400.0;
constexpr double kMaxFusionBytes = 1099511627776.0;
constexpr double kMaxCacheCapacity = 65536.0;  // ResponseCache::kMaxBits

constexpr Type kInt = Type::kInt;
constexpr Type kDouble = Type::kDouble;
constexpr Type kBool = Type::kBool;
constexpr Type kString = Type::kString;
constexpr Type kEnum = Type::kEnum;
constexpr Section kTuning = Section::kTuning;
constexpr Section kLaunch = Section::kLaunch;
constexpr OutOfRange kClamp = OutOfRange::kClamp;
constexpr OutOfRange kToDefault = OutOfRange::kDefault;
// The config_key and config_key_name columns.
#define KEY(key) key, #key
#define NO_KEY -1, nullptr

// Columns: id, name, HOROVOD_ alias, type, section, default (number), default (text), min,
// max, out of range, unit, enum values, hvd_config key and its name, description.
const SettingInfo kTable[] = {
    {Setting::kStartTimeout, "START_TIMEOUT", true, kInt, kTuning, 120, nullptr, -kUnbounded,
     kUnbounded, kClamp, "s", nullptr, NO_KEY,
     "How long `hvd_init` and `hvd_finalize` may take (`hvd_init_params_t.timeout_ms` "
     "overrides it)."},
    {Setting::kOpTimeout, "OP_TIMEOUT", true, kInt, kTuning, 1800, nullptr, -1, kUnbounded, kClamp,
     "s", nullptr, NO_KEY,
     "How long one op may take before it fails with `HVD_ERR_TIMED_OUT` and the context "
     "aborts; negative: no limit."},
    {Setting::kPeerTimeout, "PEER_TIMEOUT", false, kInt, kTuning, 30, nullptr, 0, 3600, kClamp, "s",
     nullptr, NO_KEY,
     "How long a rank, the rendezvous server or hvdrun may go without an answer from a host "
     "(TCP keepalive on their connections, ssh's server-alive messages) before counting it "
     "lost, so that a host that vanished without closing its connections fails the job, or "
     "re-forms an elastic one, in about this time; 0: no such check."},
    {Setting::kLogLevel, "LOG_LEVEL", true, kEnum, kTuning, 0, "warning", 0, 0, kClamp, "",
     "trace|debug|info|warning|error|fatal", NO_KEY,
     "The least severe messages written to stderr (`warn` is `warning`; anything else is "
     "ignored)."},
    {Setting::kHostname, "HOSTNAME", true, kString, kTuning, 0, nullptr, 0, 0, kClamp, "", nullptr,
     NO_KEY,
     "This host's name for the placement of ranks (ranks with the same name share a host); "
     "unset: gethostname()."},
    {Setting::kUcxErrMode, "UCX_ERR_MODE", true, kEnum, kTuning, 0, nullptr, 0, 0, kClamp, "",
     "peer", NO_KEY,
     "`peer`: UCX error handling on every endpoint. Unset: same-host peers use shared memory "
     "without it and rely on the rendezvous connection for failure detection."},
    {Setting::kIface, "IFACE", false, kString, kTuning, 0, nullptr, 0, 0, kClamp, "", nullptr,
     NO_KEY,
     "The network interfaces (`eth1` or `eth1,eth2`) between hosts: UCX's network devices "
     "(`UCX_NET_DEVICES`, which wins when set too; shared memory is not affected), and the "
     "interface errors about an unreachable host name. Unset: UCX's choice, and errors name "
     "the interface toward the rendezvous server."},
    {Setting::kGlooIface, "GLOO_IFACE", true, kString, kTuning, 0, nullptr, 0, 0, kClamp, "",
     nullptr, NO_KEY, "Horovod's name for `HVD_IFACE` (read when that is unset)."},

    {Setting::kFusionThreshold, "FUSION_THRESHOLD", true, kInt, kTuning, 134217728, nullptr, 0,
     kMaxFusionBytes, kClamp, "bytes", nullptr, KEY(HVD_CONFIG_FUSION_THRESHOLD),
     "Allreduces, allgathers or reducescatters of at most this many bytes together run as one "
     "collective; 0: no fusion. Rank 0's value decides for the job."},
    {Setting::kCycleTime, "CYCLE_TIME", true, kDouble, kTuning, 0, nullptr, 0, kDaySeconds * 1000.0,
     kClamp, "ms", nullptr, KEY(HVD_CONFIG_CYCLE_TIME),
     "How long the engine may hold newly enqueued ops to report them together (0: never "
     "waits)."},
    {Setting::kCacheCapacity, "CACHE_CAPACITY", true, kInt, kTuning, 1024, nullptr, 0,
     kMaxCacheCapacity, kClamp, "entries", nullptr, KEY(HVD_CONFIG_CACHE_CAPACITY),
     "Response cache entries per process set: an op of a set that ran before with the same "
     "name and parameters is agreed by one exchange of bit vectors among the ranks instead of a "
     "round trip through rank 0; 0: off. Rank 0's value decides."},
    {Setting::kAutotune, "AUTOTUNE", true, kBool, kTuning, 0, nullptr, 0, 1, kClamp, "", nullptr,
     KEY(HVD_CONFIG_AUTOTUNE),
     "1: rank 0 tunes fusion threshold, cycle time, the response cache's on/off switch and "
     "(across hosts) hierarchical allreduce online by Bayesian optimisation (see Autotune) and "
     "every rank follows; settings set explicitly are held."},
    {Setting::kAutotuneSearch, "AUTOTUNE_SEARCH", false, kEnum, kTuning, 0, "bayesian", 0, 0,
     kClamp, "", "bayesian|grid", NO_KEY,
     "How autotune searches: `bayesian` (as Horovod), or `grid`: every point of a fixed grid "
     "(fusion threshold 0, 1, 4, 16, 64 and 128 MiB x cycle time 0, 0.5, 1, 2.5 and 5 ms x "
     "each switch off and on), keeping the best scored; slower, for mapping a job's "
     "throughput."},
    {Setting::kAutotuneLog, "AUTOTUNE_LOG", true, kString, kTuning, 0, nullptr, 0, 0, kClamp, "",
     nullptr, NO_KEY,
     "A CSV file of rank 0's autotune samples; each rank writes what it adopted to "
     "`<file>.<rank>`."},
    {Setting::kAutotuneWarmupSamples, "AUTOTUNE_WARMUP_SAMPLES", true, kInt, kTuning, 1, nullptr, 0,
     kInt32Max, kClamp, "", nullptr, NO_KEY,
     "Autotune samples discarded at the start of the search, before the first point's."},
    {Setting::kAutotuneStepsPerSample, "AUTOTUNE_STEPS_PER_SAMPLE", true, kInt, kTuning, 10,
     nullptr, 1, kInt32Max, kClamp, "", nullptr, NO_KEY,
     "Ops in one autotune sample (a sample also lasts at least 5 ms)."},
    {Setting::kAutotuneBayesOptMaxSamples, "AUTOTUNE_BAYES_OPT_MAX_SAMPLES", true, kInt, kTuning,
     20, nullptr, 1, 1000, kClamp, "", nullptr, NO_KEY,
     "Points autotune scores before it keeps the best one (the first three are fixed, the rest "
     "chosen by expected improvement)."},
    {Setting::kAutotuneGaussianProcessNoise, "AUTOTUNE_GAUSSIAN_PROCESS_NOISE", true, kDouble,
     kTuning, 0.2, nullptr, 0, 10, kClamp, "", nullptr, NO_KEY,
     "The noise autotune's Gaussian process assumes in a point's score, in standard deviations "
     "of the scores so far: larger trusts single samples less."},
    {Setting::kTimeline, "TIMELINE", true, kString, kTuning, 0, nullptr, 0, 0, kClamp, "", nullptr,
     NO_KEY,
     "A Chrome-trace file written by rank 0 (`hvd_timeline_start/stop` do it at run time on "
     "any rank)."},
    {Setting::kTimelineMarkCycles, "TIMELINE_MARK_CYCLES", true, kBool, kTuning, 0, nullptr, 0, 1,
     kClamp, "", nullptr, NO_KEY, "1: the timeline marks every engine cycle."},
    {Setting::kStallCheckTimeSeconds, "STALL_CHECK_TIME_SECONDS", true, kInt, kTuning, 60, nullptr,
     0, kDaySeconds, kClamp, "s", nullptr, KEY(HVD_CONFIG_STALL_CHECK_TIME),
     "Ops some ranks enqueued and others did not are logged with the missing ranks after this "
     "long; 0: never."},
    {Setting::kStallCheckDisable, "STALL_CHECK_DISABLE", true, kBool, kTuning, 0, nullptr, 0, 1,
     kClamp, "", nullptr, NO_KEY, "1: no stall check (as `STALL_CHECK_TIME_SECONDS=0`)."},
    {Setting::kStallShutdownTimeSeconds, "STALL_SHUTDOWN_TIME_SECONDS", true, kInt, kTuning, 0,
     nullptr, 0, kDaySeconds, kClamp, "s", nullptr, KEY(HVD_CONFIG_STALL_SHUTDOWN_TIME),
     "Such ops then fail with `HVD_ERR_TIMED_OUT` and the job aborts after this long; 0: "
     "never."},
    {Setting::kSpinUs, "SPIN_US", true, kInt, kTuning, 50, nullptr, 0, kUnbounded, kClamp, "us",
     nullptr, NO_KEY,
     "How long a waiting thread polls before sleeping (default 200 when a host runs more ranks "
     "than it has CPUs; 0: sleep at once). A thread waiting on a request runs the engine's work "
     "itself for up to this long after the last progress, instead of sleeping until the engine "
     "thread has finished the op and woken it. Per context."},
    {Setting::kSpinYield, "SPIN_YIELD", true, kBool, kTuning, 0, nullptr, 0, 1, kClamp, "", nullptr,
     NO_KEY,
     "1: a polling thread yields its CPU after every poll, so that the rank it waits for, "
     "sharing that CPU, runs at once (default 1 when a host runs more ranks than it has CPUs). "
     "Per context."},
    {Setting::kEngineBatch, "ENGINE_BATCH", true, kBool, kTuning, 1, nullptr, 0, 1, kClamp, "",
     nullptr, NO_KEY,
     "1: the engine thread runs as `SCHED_BATCH` (when `SPIN_US` > 0), so that its wake-ups "
     "do not preempt the caller; it never spins while idle."},

    {Setting::kAllreduceRdMaxBytes, "ALLREDUCE_RD_MAX_BYTES", true, kInt, kTuning, 262144, nullptr,
     1, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "Allreduces up to this size use recursive doubling, larger ones the ring (transport "
     "path)."},
    {Setting::kAllreduceRingChunkBytes, "ALLREDUCE_RING_CHUNK_BYTES", true, kInt, kTuning, 262144,
     nullptr, 1, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "The ring allreduce's pipeline chunk (transport path)."},
    {Setting::kBroadcastTreeMaxBytes, "BROADCAST_TREE_MAX_BYTES", true, kInt, kTuning, 65536,
     nullptr, 1, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "Broadcasts up to this size use a binomial tree, larger ones a pipelined chain "
     "(transport path)."},
    {Setting::kBroadcastChunkBytes, "BROADCAST_CHUNK_BYTES", true, kInt, kTuning, 262144, nullptr,
     1, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "The pipelined broadcast's chunk (transport path)."},
    {Setting::kShm, "SHM", true, kBool, kTuning, 1, nullptr, 0, 1, kClamp, "", nullptr, NO_KEY,
     "1: the allreduces, allgathers and broadcasts of ranks that share a host go through a "
     "shared-memory segment in `/dev/shm` (one for a single-host job's global process set, one "
     "per other process set on one host), removed from the namespace as soon as every member "
     "has mapped it; 0 on any member, or any member failing to map it, keeps them on UCX."},
    {Setting::kShmSlotBytes, "SHM_SLOT_BYTES", true, kInt, kTuning, 1048576, nullptr, 0, kUnbounded,
     kToDefault, "bytes", nullptr, NO_KEY,
     "Bytes each rank stages per round, rounded up to whole pages, at most 64 MiB (0: the "
     "default); the segment takes twice that per rank."},
    {Setting::kShmOneShotMaxBytes, "SHM_ONE_SHOT_MAX_BYTES", true, kInt, kTuning, 16384, nullptr, 0,
     kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "Allreduces up to this size are reduced whole by every rank in one round."},
    {Setting::kShmSingleCopyMinBytes, "SHM_SINGLE_COPY_MIN_BYTES", true, kInt, kTuning, 16384,
     nullptr, 0, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "Broadcasts from this size are copied straight from the owner's memory with Linux "
     "cross-memory attach when every rank may; allgather blocks and two-rank broadcasts, each "
     "rank copying half, too; 0: never."},
    {Setting::kShmSingleCopyMaxBytes, "SHM_SINGLE_COPY_MAX_BYTES", true, kInt, kTuning, 1048576,
     nullptr, 0, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "Broadcasts up to this size go by single copy (see `SHM_SINGLE_COPY_MIN_BYTES`)."},
    {Setting::kShmMappedMinBytes, "SHM_MAPPED_MIN_BYTES", true, kInt, kTuning, 16384, nullptr, 0,
     kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "Allreduces from this size (and above the one-shot size) whose tensors every rank "
     "allocated with `hvd_mem_alloc` are reduced in place in each other's buffers; 0: never."},
    {Setting::kHierarchicalAllreduce, "HIERARCHICAL_ALLREDUCE", true, kEnum, kTuning, 0, "auto", 0,
     0, kClamp, "", "auto|1|0", NO_KEY,
     "Allreduces of a job that spans hosts: `1` (any size) or `auto` (from "
     "`HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES`) reduce-scatter within each host through shared "
     "memory, "
     "then each of a host's ranks allreduces its share across hosts with the ranks of the same "
     "local rank, then the host gathers the shares; `0`: one ring or recursive doubling over "
     "all ranks. With uneven hosts the buffer is cut into as many shares as the smallest host "
     "has ranks. Needs a host of two ranks or more, shared memory on every such host and the "
     "same value on every rank; otherwise the flat algorithms run. `1` also runs allreduces "
     "of CUDA tensors on NCCL hierarchically (NCCL within each host, the host path across "
     "hosts); `auto` leaves them to NCCL across hosts."},
    {Setting::kHierarchicalAllreduceMinBytes, "HIERARCHICAL_ALLREDUCE_MIN_BYTES", false, kInt,
     kTuning, 16384, nullptr, 0, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "With `HVD_HIERARCHICAL_ALLREDUCE=auto`, allreduces from this size run hierarchically."},
    {Setting::kHierarchicalAllgather, "HIERARCHICAL_ALLGATHER", true, kEnum, kTuning, 0, "auto", 0,
     0, kClamp, "", "auto|1|0", NO_KEY,
     "Allgathers of a job that spans hosts: `1` (any size) or `auto` (up to "
     "`HVD_HIERARCHICAL_ALLGATHER_MAX_BYTES` of output where that is set, where some host runs "
     "two ranks or more) gather each host's block through shared memory, then each of a host's "
     "ranks gathers its share of every host's block across hosts with the ranks of the same "
     "local rank, then the host gathers the shares; `0`: one ring over all ranks. Any number of "
     "ranks per host; needs shared memory on every host and the same value on every rank. "
     "`1` also runs allgathers of CUDA tensors on NCCL hierarchically (NCCL within each host, "
     "the hosts' first ranks across hosts through host memory); `auto` leaves them to NCCL "
     "across hosts."},
    {Setting::kHierarchicalAllgatherMaxBytes, "HIERARCHICAL_ALLGATHER_MAX_BYTES", false, kInt,
     kTuning, 0, nullptr, 0, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "With `HVD_HIERARCHICAL_ALLGATHER=auto`, allgathers of more than this many bytes of output "
     "run flat (`0`: no limit): for networks fast enough that the hierarchical one's two "
     "gathers through shared memory cost more than the cross-host bytes they save."},
    {Setting::kHierarchicalBroadcast, "HIERARCHICAL_BROADCAST", false, kEnum, kTuning, 0, "auto", 0,
     0, kClamp, "", "auto|1|0", NO_KEY,
     "Broadcasts of a job that spans hosts: `1` (any size) or `auto` (from "
     "`HVD_HIERARCHICAL_BROADCAST_MIN_BYTES`, where some host runs two ranks or more) cross the "
     "network once per host (large ones in shares, one per local rank) and reach the host's "
     "other ranks through shared memory; `0`: one tree or chain over all ranks. Any number of "
     "ranks per host; needs shared memory on every host and the same value on every rank."},
    {Setting::kHierarchicalBroadcastMinBytes, "HIERARCHICAL_BROADCAST_MIN_BYTES", false, kInt,
     kTuning, 0, nullptr, 0, kUnbounded, kToDefault, "bytes", nullptr, NO_KEY,
     "With `HVD_HIERARCHICAL_BROADCAST=auto`, broadcasts from this size run hierarchically (0: "
     "every size)."},
    {Setting::kGpuOperations, "GPU_OPERATIONS", true, kEnum, kTuning, 0, nullptr, 0, 0, kClamp, "",
     "nccl|host", NO_KEY,
     "How collectives on CUDA tensors move data. `nccl` (the default where every member of the "
     "set has its own GPU and NCCL loaded): NCCL on the devices; `host`: through pinned host "
     "memory and the CPU collectives. Any rank asking for `host`, a rank without NCCL, two "
     "members on one GPU or a joined rank make an op take the host path on every rank."},
    {Setting::kGpuModule, "GPU_MODULE", false, kString, kTuning, 0, nullptr, 0, 0, kClamp, "",
     nullptr, NO_KEY,
     "The GPU module's path; unset: `libhvd-nccl.so.1` beside `libhvd.so`, then through the "
     "system's library search path. Loaded on the first CUDA tensor."},
    {Setting::kNcclLibrary, "NCCL_LIBRARY", false, kString, kTuning, 0, nullptr, 0, 0, kClamp, "",
     nullptr, NO_KEY,
     "The NCCL library the GPU module loads; unset: `libnccl.so.2` through the system's "
     "library search path (the Python package sets it to PyPI's `nvidia-nccl` wheel's library "
     "where that is installed and no NCCL is loaded yet)."},

    {Setting::kRank, "RANK", true, kInt, kLaunch, 0, nullptr, 0, kInt32Max - 1, kClamp, "", nullptr,
     NO_KEY, "This process's rank, in [0, `SIZE`)."},
    {Setting::kSize, "SIZE", true, kInt, kLaunch, 1, nullptr, 1, kInt32Max, kClamp, "", nullptr,
     NO_KEY, "The number of ranks of the job."},
    {Setting::kLocalRank, "LOCAL_RANK", true, kInt, kLaunch, 0, nullptr, 0, kInt32Max - 1, kClamp,
     "", nullptr, NO_KEY, "This process's rank among those of its host."},
    {Setting::kLocalSize, "LOCAL_SIZE", true, kInt, kLaunch, 1, nullptr, 1, kInt32Max, kClamp, "",
     nullptr, NO_KEY, "The number of ranks on this host."},
    {Setting::kRendezvousAddr, "RENDEZVOUS_ADDR", true, kString, kLaunch, 0, nullptr, 0, 0, kClamp,
     "", nullptr, NO_KEY,
     "Rank 0's host, where the rendezvous server listens (with `RENDEZVOUS_PORT`); also the "
     "address `hvd_get_unique_id` advertises (unset: this host's name resolved)."},
    {Setting::kRendezvousPort, "RENDEZVOUS_PORT", true, kInt, kLaunch, 1, nullptr, 1, 65535, kClamp,
     "", nullptr, NO_KEY, "The rendezvous server's port."},
    {Setting::kJobId, "JOB_ID", true, kString, kLaunch, 0, nullptr, 0, 0, kClamp, "", nullptr,
     NO_KEY,
     "Without a rendezvous address: the ranks of a single-host job meet through a private "
     "file named after it (unset: the launcher's job id)."},
    {Setting::kPmixLibrary, "PMIX_LIBRARY", false, kString, kLaunch, 0, nullptr, 0, 0, kClamp, "",
     nullptr, NO_KEY,
     "The PMIx library through which ranks that a PMIx launcher (`mpirun`, `srun --mpi=pmix`) "
     "spread over hosts find rank 0 when no rendezvous address is given; unset: "
     "`libpmix.so.2` through the system's library search path."},
    {Setting::kSecret, "SECRET", true, kString, kLaunch, 0, nullptr, 0, 0, kClamp, "", nullptr,
     NO_KEY,
     "The key that authenticates rendezvous messages; the same value on every rank (unset: "
     "rank 0 makes a random one and hands it over through a private file when the job is on "
     "one host, or through the launcher's PMIx server, and `hvd_init` fails when the job may "
     "span hosts and meets at a given rendezvous address)."},
    {Setting::kAllowUnauthenticated, "ALLOW_UNAUTHENTICATED", true, kBool, kLaunch, 0, nullptr, 0,
     1, kClamp, "", nullptr, NO_KEY,
     "1: a job that may span hosts and has no `SECRET` uses one derived from the job id and "
     "address, which anyone who knows them can compute and so join the job (a warning says "
     "so); 0: `hvd_init` fails instead."},
    {Setting::kElasticAddr, "ELASTIC_ADDR", false, kString, kLaunch, 0, nullptr, 0, 0, kClamp, "",
     nullptr, NO_KEY,
     "An elastic job's membership service (hvdrun `--min-np`/`--max-np`), with "
     "`ELASTIC_PORT`: `hvd_init` asks it for this worker's rank, size and rendezvous in the "
     "job's next membership round instead of reading `RANK` and `SIZE`."},
    {Setting::kElasticPort, "ELASTIC_PORT", false, kInt, kLaunch, 1, nullptr, 1, 65535, kClamp, "",
     nullptr, NO_KEY, "The membership service's port."},
    {Setting::kWorkerId, "WORKER_ID", false, kInt, kLaunch, 0, nullptr, 0, kInt32Max, kClamp, "",
     nullptr, NO_KEY, "This worker's id in an elastic job, stable across rounds."},
    {Setting::kElasticTimeout, "ELASTIC_TIMEOUT", false, kInt, kLaunch, 600, nullptr, 1,
     kDaySeconds, kClamp, "s", nullptr, NO_KEY,
     "How long `hvd_init` of an elastic worker waits for its membership round to form "
     "(hvdrun's `--elastic-timeout`)."},
};

#undef KEY
#undef NO_KEY

static_assert(sizeof kTable / sizeof kTable[0] == static_cast<size_t>(Setting::kCount),
              "one row per Setting");

}  // namespace

const SettingInfo &info(Setting s) {
    return kTable[static_cast<size_t>(s)];
}

const SettingInfo *all_settings(size_t *count) {
    *count = sizeof kTable / sizeof kTable[0];
    return kTable;
}

const SettingInfo *find_config_key(int32_t key) {
    if (key < 0) return nullptr;
    for (const SettingInfo &s : kTable)
        if (s.config_key == key) return &s;
    return nullptr;
}

std::string variable_name(Setting s) {
    return std::string("HVD_") + info(s).name;
}

}  // namespace hvd::config
