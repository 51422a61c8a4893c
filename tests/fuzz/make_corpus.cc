// SPDX-License-Identifier: Apache-2.0
// Writes the fuzz targets' seed corpora from real messages, made by the library's own encoders
// (rendezvous frames and proofs, ready reports, response batches, cache votes, host entries,
// unique ids) or laid out as the targets read their input (environments, C API calls):
//   fuzz_make_corpus DIR    writes DIR/<target>/<name> for every target
// The committed corpus under tests/fuzz/corpus came from it; run it again after a message
// changes its layout.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <string>

#include "bootstrap/kv_auth.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/unique_id.h"
#include "hvd/hvd.h"
#include "kv_fixture.h"
#include "negotiation/cache_round.h"
#include "negotiation/op_meta.h"
#include "negotiation/wire_protocol.h"

using namespace hvd::bootstrap;
using namespace hvd::negotiation;

namespace {

std::string g_root;

void write(const std::string &target, const std::string &name, const std::string &bytes) {
    std::string dir = g_root + "/" + target;
    ::mkdir(g_root.c_str(), 0755);
    ::mkdir(dir.c_str(), 0755);
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

// ------------------------------------------------------------------ rendezvous

std::string hello(uint32_t version, int32_t rank, int32_t size, const std::string &secret) {
    return encode_frame(KvMsg::kHello,
                        {encode_u32(version), encode_u32(static_cast<uint32_t>(rank)),
                         encode_u32(static_cast<uint32_t>(size)), fuzz::kKvClientNonce,
                         proof_field(client_proof(secret, fuzz::kKvServerNonce, rank, size))});
}

void kv_protocol() {
    const std::string t = "kv_protocol";
    const std::string good =
        hello(kKvProtocolVersion, fuzz::kKvRank, fuzz::kKvSize, fuzz::kKvSecret);
    const std::string session = encode_frame(KvMsg::kPut, {"host.1", "node-a\nlibhvd 0.2.0"}) +
                                encode_frame(KvMsg::kGet, {encode_u64(7), "host.0"}) +
                                encode_frame(KvMsg::kGet, {encode_u64(8), "host.1"}) +
                                encode_frame(KvMsg::kPut, {"host.0", "node-b"}) +
                                encode_frame(KvMsg::kBye, {});
    write(t, "server_session", std::string(1, '\xff') + good + session);
    write(t, "server_session_bytewise", std::string(1, '\0') + good + session);
    write(t, "server_wrong_secret",
          std::string(1, '\x10') + hello(kKvProtocolVersion, 0, 2, "other secret"));
    write(t, "server_wrong_version", std::string(1, '\x10') + hello(7, 0, 2, fuzz::kKvSecret));
    const std::string challenge =
        encode_frame(KvMsg::kChallenge, {encode_u32(kKvProtocolVersion), fuzz::kKvServerNonce});
    const std::string welcome = encode_frame(
        KvMsg::kWelcome,
        {proof_field(server_proof(fuzz::kKvSecret, fuzz::kKvClientNonce, fuzz::kKvServerNonce))});
    const std::string notices = encode_frame(KvMsg::kFailed, {encode_u32(2)}) +
                                encode_frame(KvMsg::kValue, {encode_u64(7), "node-b"}) +
                                encode_frame(KvMsg::kFailed, {encode_u32(3)});
    write(t, "client_session", std::string(1, '\x40') + challenge + welcome + notices);
    write(t, "client_retry",
          std::string(1, '\x40') + challenge +
              encode_frame(KvMsg::kReject,
                           {std::string(kRejectRetryPrefix) + "rank 1 already left"}));
    write(t, "client_reject",
          std::string(1, '\x40') + challenge +
              encode_frame(KvMsg::kReject, {"authentication failed (wrong job secret?)"}));
}

// ------------------------------------------------------------------ messages between ranks

OpMeta meta(const std::string &name, OpType type, int32_t dtype,
            std::initializer_list<int64_t> dims) {
    OpMeta m;
    m.name = name;
    m.type = type;
    m.dtype = dtype;
    m.shape = dims;
    return m;
}

void wire_messages() {
    const std::string t = "wire_messages";
    ReadyReport ready;
    ready.after_round = 3;
    ready.metas.push_back(meta("grad.w", OpType::kAllreduce, HVD_DTYPE_FLOAT32, {4, 3}));
    ready.metas.push_back(meta("allgather.noname.1", OpType::kAllgather, HVD_DTYPE_INT64, {2, 5}));
    OpMeta bcast = meta("params", OpType::kBroadcast, HVD_DTYPE_FLOAT64, {7});
    bcast.root = 1;
    ready.metas.push_back(bcast);
    OpMeta a2a = meta("a2a", OpType::kAlltoall, HVD_DTYPE_INT32, {6, 2});
    a2a.splits = {2, 4};
    ready.metas.push_back(a2a);
    OpMeta g0 = meta("group.0", OpType::kAllreduce, HVD_DTYPE_BFLOAT16, {8});
    g0.group = "group";
    g0.group_size = 2;
    g0.prescale = 0.5;
    OpMeta g1 = g0;
    g1.name = "group.1";
    ready.metas.push_back(g0);
    ready.metas.push_back(g1);
    OpMeta into = meta("into", OpType::kAllgather, HVD_DTYPE_UINT8, {3});
    into.out_rows = 6;
    into.in_row = 0;
    ready.metas.push_back(into);
    write(t, "ready_ops", std::string(1, '\0') + encode_ready(ready));
    ReadyReport control;
    control.metas.push_back(meta("rs", OpType::kReducescatter, HVD_DTYPE_FLOAT16, {5, 2}));
    control.metas.push_back(meta("barrier.noname.1", OpType::kBarrier, 0, {}));
    OpMeta create = meta("process_set_create.1", OpType::kProcessSetCreate, 0, {});
    create.splits = {0, 1};
    control.metas.push_back(create);
    OpMeta destroy = meta("process_set_destroy.1", OpType::kProcessSetDestroy, 0, {});
    destroy.root = 1;
    control.metas.push_back(destroy);
    control.metas.push_back(meta("join.noname.1", OpType::kJoin, 0, {}));
    write(t, "ready_control", std::string(1, '\0') + encode_ready(control));

    ResponseBatch batch;
    batch.index = 2;
    batch.stamp = 5;
    Response r;
    r.name = "grad.w";
    r.seq = 11;
    r.dtype = HVD_DTYPE_FLOAT32;
    r.shape = {4, 3};
    r.fuse_next = true;
    r.cache_bit = 3;
    batch.responses.push_back(r);
    Response g;
    g.name = "gather";
    g.type = OpType::kAllgather;
    g.seq = 12;
    g.first_dims = {2, 3};
    g.group = "grp";
    batch.responses.push_back(g);
    Response e;
    e.name = "bad";
    e.status = HVD_ERR_MISMATCH;
    e.message = "allreduce 'bad': rank 1 has shape [4,3], rank 0 has shape [4,2]";
    batch.responses.push_back(e);
    write(t, "batch", std::string(1, '\1') + encode_batch(batch));

    RoundVote v;
    v.round = 4;
    v.sets.resize(2);
    v.sets[0].ready.set(0);
    v.sets[0].ready.set(5);
    v.sets[0].ready.set(130);
    v.sets[0].invalid.set(7);
    v.sets[1].set_id = 3;
    v.sets[1].ready.set(2);
    v.batches = 2;
    v.fusion_threshold = 64 << 20;
    write(t, "vote", std::string(1, '\2') + encode_vote(v));
    RoundVote joined;
    joined.round = 1;
    joined.sets.resize(1);
    joined.sets[0].set_id = 1;
    joined.sets[0].joined = true;
    write(t, "vote_joined", std::string(1, '\2') + encode_vote(joined));
    RoundOutcome outcome;
    outcome.round = 4;
    outcome.sets.resize(2);
    outcome.sets[0].ready_everywhere.set(5);
    outcome.sets[0].invalid.set(7);
    outcome.sets[1].set_id = 3;
    outcome.sets[1].any_joined = true;
    outcome.batches = 2;
    outcome.fusion_threshold = 64 << 20;
    outcome.hierarchical_ops = 1;
    write(t, "outcome", std::string(1, '\4') + encode_outcome(outcome));

    std::string hosts = host_entry("node-a") + '\0' + host_entry("node-b") + '\0' + "old-node" +
                        '\0' + "node-c\nlibhvd 9.9.9 protocol 99";
    write(t, "hosts", std::string(1, '\3') + hosts);
}

// ------------------------------------------------------------------ unique ids, environments

void unique_ids() {
    hvd_unique_id_t id = make_unique_id(100);
    write("unique_id", "made", std::string(id.internal, sizeof id.internal));
    ::setenv("HVD_RENDEZVOUS_ADDR", "rank0.cluster.example.org", 1);
    id = make_unique_id(100);
    write("unique_id", "named_host", std::string(id.internal, sizeof id.internal));
    ::unsetenv("HVD_RENDEZVOUS_ADDR");
}

void launch_env() {
    const std::string t = "launch_env";
    write(t, "hvdrun",
          "HVD_RANK=1\nHVD_SIZE=4\nHVD_LOCAL_RANK=1\nHVD_LOCAL_SIZE=2\n"
          "HVD_RENDEZVOUS_ADDR=10.0.0.1\nHVD_RENDEZVOUS_PORT=29400\nHVD_SECRET=00ff00ff\n");
    write(t, "openmpi",
          "OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2\nOMPI_COMM_WORLD_LOCAL_RANK=0\n"
          "OMPI_COMM_WORLD_LOCAL_SIZE=2\nOMPI_MCA_ess_base_jobid=12345\n");
    write(t, "openmpi_pmix",
          "OMPI_COMM_WORLD_RANK=1\nOMPI_COMM_WORLD_SIZE=4\nOMPI_COMM_WORLD_LOCAL_RANK=1\n"
          "OMPI_COMM_WORLD_LOCAL_SIZE=2\nOMPI_MCA_ess_base_jobid=12345\n"
          "PMIX_NAMESPACE=12345\nPMIX_RANK=1\n");
    write(t, "slurm",
          "SLURM_PROCID=3\nSLURM_NTASKS=8\nSLURM_LOCALID=1\nSLURM_JOB_ID=991\nSLURM_STEP_ID=0\n"
          "MASTER_ADDR=node7\nMASTER_PORT=29500\nHVD_ALLOW_UNAUTHENTICATED=1\n");
    write(t, "pmi",
          "PMI_RANK=0\nPMI_SIZE=1\nMPI_LOCALRANKID=0\nMPI_LOCALNRANKS=1\nPMI_KVSNAME=kvs_1\n");
    write(t, "hydra",
          "PMI_RANK=2\nPMI_SIZE=4\nPMI_FD=6\nMPI_LOCALRANKID=0\nMPI_LOCALNRANKS=2\n"
          "MPIR_CVAR_CH3_INTERFACE_HOSTNAME=node2\n");
    write(t, "torchrun",
          "RANK=2\nWORLD_SIZE=4\nLOCAL_RANK=0\nLOCAL_WORLD_SIZE=2\nMASTER_ADDR=10.1.1.1\n"
          "MASTER_PORT=65534\nTORCHELASTIC_RUN_ID=run9\nHOROVOD_SECRET=s\n");
    write(t, "horovod_names",
          "HOROVOD_RANK=0\nHOROVOD_SIZE=2\nHOROVOD_JOB_ID=j\nHOROVOD_RENDEZVOUS_ADDR=h\n"
          "HOROVOD_RENDEZVOUS_PORT=1\n");
    write(t, "malformed", "HVD_RANK= 1\nHVD_SIZE=2x\nHVD_RENDEZVOUS_PORT=70000\n");
}

// ------------------------------------------------------------------ C API calls

// The bytes fuzz_capi reads for one call, in its order.
struct Call {
    std::string b;
    template <typename T>
    Call &put(T v) {
        b.append(reinterpret_cast<const char *>(&v), sizeof v);
        return *this;
    }
    // A small tensor: no optional fields, dtype and ndim as bytes, dims as bytes, data given.
    Call &tensor(uint8_t dtype, std::initializer_list<uint8_t> dims) {
        put<uint8_t>(0).put<uint8_t>(dtype).put<uint8_t>(static_cast<uint8_t>(dims.size()));
        for (uint8_t d : dims)
            put<uint8_t>(d);
        return *this;
    }
    // Parameters: field mask (a byte), name, reduce op, root, scales, splits, no timeout.
    Call &params(uint8_t mask, const std::string &name, uint8_t reduce_op,
                 std::initializer_list<int32_t> splits = {}) {
        put<uint8_t>(0).put<uint8_t>(mask).put<uint16_t>(static_cast<uint16_t>(name.size()));
        b += name;
        put<uint8_t>(reduce_op).put<int8_t>(0).put<double>(1.0).put<double>(1.0);
        put<int8_t>(static_cast<int8_t>(splits.size()));
        for (int32_t s : splits)
            put<int32_t>(s);
        return *this;
    }
    // What fuzz_capi reads once the request completed: output index, splits count, message.
    Call &finish() { return put<int8_t>(0).put<uint8_t>(1).put<uint8_t>(64); }
};

void capi() {
    const std::string t = "capi";
    const uint8_t named = HVD_OP_FIELD_NAME | HVD_OP_FIELD_REDUCE_OP;
    Call allreduce;
    allreduce.put<uint8_t>(0).tensor(HVD_DTYPE_FLOAT32, {4, 3}).tensor(HVD_DTYPE_FLOAT32, {4, 3});
    allreduce.put<uint8_t>(0).params(named, "grad", HVD_OP_SUM).finish();
    write(t, "allreduce", allreduce.b);
    Call gather;
    gather.put<uint8_t>(1).tensor(HVD_DTYPE_INT64, {2, 5}).tensor(0, {});
    gather.put<uint8_t>(0).params(HVD_OP_FIELD_NAME, "gather", 0).finish();
    write(t, "allgather", gather.b);
    Call into;
    into.put<uint8_t>(2).tensor(HVD_DTYPE_UINT8, {3, 2}).tensor(HVD_DTYPE_UINT8, {3, 2});
    into.put<uint8_t>(8).params(0, "", 0).finish();
    write(t, "allgather_into_in_place", into.b);
    Call bcast;
    bcast.put<uint8_t>(3).tensor(HVD_DTYPE_FLOAT64, {7}).tensor(HVD_DTYPE_FLOAT64, {7});
    bcast.put<uint8_t>(2).params(HVD_OP_FIELD_ROOT, "", 0).finish();
    write(t, "broadcast_in_place", bcast.b);
    Call a2a;
    a2a.put<uint8_t>(4).tensor(HVD_DTYPE_INT32, {6, 2}).tensor(0, {});
    a2a.put<uint8_t>(0).params(HVD_OP_FIELD_SPLITS, "a2a", 0, {5}).finish();
    write(t, "alltoall_splits", a2a.b);
    Call rs;
    rs.put<uint8_t>(5).tensor(HVD_DTYPE_BFLOAT16, {5, 2}).tensor(0, {});
    rs.put<uint8_t>(0).params(named, "rs", HVD_OP_AVERAGE).finish();
    write(t, "reducescatter", rs.b);
    Call control;
    control.put<uint8_t>(6).put<uint8_t>(0).params(HVD_OP_FIELD_PROCESS_SET, "", 0).finish();
    control.put<uint8_t>(7).put<uint8_t>(0).params(0, "", 0).finish();
    control.put<uint8_t>(11).put<uint8_t>(2).put<int8_t>(0);
    control.put<uint8_t>(12).put<uint16_t>(100);
    write(t, "barrier_join_set_memory", control.b);
    Call grouped;
    grouped.put<uint8_t>(8).put<uint8_t>(3);
    grouped.tensor(HVD_DTYPE_FLOAT16, {8}).tensor(HVD_DTYPE_FLOAT16, {8});
    grouped.tensor(HVD_DTYPE_INT8, {2, 2}).tensor(HVD_DTYPE_INT8, {2, 2});
    grouped.put<uint8_t>(0).params(named, "group", HVD_OP_MAX).finish();
    write(t, "grouped_allreduce", grouped.b);
    Call bad;
    bad.put<uint8_t>(0).put<uint8_t>(16 | 4).put<uint8_t>(HVD_DTYPE_FLOAT32).put<int32_t>(2);
    bad.put<int64_t>(INT64_MAX).put<int64_t>(4).tensor(HVD_DTYPE_FLOAT32, {1});
    bad.put<uint8_t>(0).params(0, "", 0).finish();
    write(t, "allreduce_overflowing_shape", bad.b);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    g_root = argv[1];
    kv_protocol();
    wire_messages();
    unique_ids();
    launch_env();
    capi();
    return 0;
}
