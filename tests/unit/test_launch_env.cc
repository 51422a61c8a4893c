// SPDX-License-Identifier: Apache-2.0
// detect_launch for every launcher style, the precedence between them, and each error,
// through a map-based environment.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <map>
#include <string>

#include "bootstrap/launch_env.h"
#include "bootstrap/sha256.h"

using namespace hvd::bootstrap;

namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup lookup(const Vars &vars) {
    return [&vars](const char *name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

LaunchInfo detect_ok(const Vars &vars) {
    LaunchInfo info;
    std::string err;
    hvd_status_t st = detect_launch(lookup(vars), &info, &err);
    if (st != HVD_OK) fail_msg("detect_launch failed: %s", err.c_str());
    return info;
}

// Expects HVD_ERR_INVALID_ARG with a message containing `needle`; *out untouched.
void detect_fails(const Vars &vars, const char *needle) {
    LaunchInfo info;
    info.launcher = "untouched";
    std::string err;
    assert_int_equal(detect_launch(lookup(vars), &info, &err), HVD_ERR_INVALID_ARG);
    if (err.find(needle) == std::string::npos)
        fail_msg("error '%s' does not mention '%s'", err.c_str(), needle);
    assert_string_equal(info.launcher.c_str(), "untouched");
}

void test_hvdrun(void **) {
    LaunchInfo info = detect_ok({{"HVD_RANK", "2"},
                                 {"HVD_SIZE", "4"},
                                 {"HVD_LOCAL_RANK", "0"},
                                 {"HVD_LOCAL_SIZE", "2"},
                                 {"HVD_RENDEZVOUS_ADDR", "node7"},
                                 {"HVD_RENDEZVOUS_PORT", "29400"},
                                 {"HVD_SECRET", "s3cr3t"}});
    assert_string_equal(info.launcher.c_str(), "hvdrun");
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.size, 4);
    assert_int_equal(info.local_rank, 0);
    assert_int_equal(info.local_size, 2);
    assert_string_equal(info.rdv_addr.c_str(), "node7");
    assert_int_equal(info.rdv_port, 29400);
    assert_string_equal(info.secret.c_str(), "s3cr3t");
    assert_false(info.secret_derived);
    assert_string_equal(info.job_id.c_str(), "");
}

void test_horovod_aliases(void **) {
    LaunchInfo info = detect_ok({{"HOROVOD_RANK", "1"},
                                 {"HOROVOD_SIZE", "2"},
                                 {"HOROVOD_RENDEZVOUS_ADDR", "10.0.0.1"},
                                 {"HOROVOD_RENDEZVOUS_PORT", "1234"},
                                 {"HOROVOD_SECRET", "abc"},
                                 {"HVD_SECRET", "wins"}});
    assert_string_equal(info.launcher.c_str(), "hvdrun");
    assert_int_equal(info.rank, 1);
    assert_string_equal(info.rdv_addr.c_str(), "10.0.0.1");
    assert_int_equal(info.rdv_port, 1234);
    assert_string_equal(info.secret.c_str(), "wins");
}

// Open MPI on one host without an address: file rendezvous named by the job id.
void test_openmpi_file_rendezvous(void **) {
    LaunchInfo info = detect_ok({{"OMPI_COMM_WORLD_RANK", "3"},
                                 {"OMPI_COMM_WORLD_SIZE", "8"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
                                 {"OMPI_MCA_ess_base_jobid", "3141592653"},
                                 {"PMIX_NAMESPACE", "prterun-host-123@1"},
                                 {"PMIX_RANK", "3"}});
    assert_string_equal(info.launcher.c_str(), "openmpi");
    assert_int_equal(info.rank, 3);
    assert_int_equal(info.size, 8);
    assert_int_equal(info.local_rank, 3);
    assert_int_equal(info.local_size, 8);
    assert_false(info.rdv_via_pmix);
    assert_string_equal(info.rdv_addr.c_str(), "");
    assert_int_equal(info.rdv_port, 0);
    assert_string_equal(info.job_id.c_str(), "3141592653");
    // No address: a single-host job; rank 0's random secret travels through the file.
    assert_true(info.secret_from_file);
    assert_false(info.secret_derived);
    assert_string_equal(info.secret.c_str(), "");
}

void test_openmpi_pmix_namespace(void **) {
    LaunchInfo info = detect_ok({{"OMPI_COMM_WORLD_RANK", "0"},
                                 {"OMPI_COMM_WORLD_SIZE", "1"},
                                 {"PMIX_NAMESPACE", "prterun-host-123@1"}});
    assert_string_equal(info.job_id.c_str(), "prterun-host-123@1");
    assert_int_equal(info.local_rank, -1);
    assert_int_equal(info.local_size, 0);
}

void test_pmi_hydra(void **) {
    LaunchInfo info = detect_ok({{"PMI_RANK", "5"},
                                 {"PMI_SIZE", "6"},
                                 {"MPI_LOCALRANKID", "2"},
                                 {"MPI_LOCALNRANKS", "3"},
                                 {"PMI_KVSNAME", "kvs_4242_0"},
                                 {"HVD_RENDEZVOUS_ADDR", "n1"},
                                 {"HVD_RENDEZVOUS_PORT", "4000"},
                                 {"HVD_SECRET", "s"}});
    assert_string_equal(info.launcher.c_str(), "pmi");
    assert_int_equal(info.rank, 5);
    assert_int_equal(info.size, 6);
    assert_int_equal(info.local_rank, 2);
    assert_int_equal(info.local_size, 3);
    assert_string_equal(info.job_id.c_str(), "kvs_4242_0");
    assert_int_equal(info.pmi_fd, -1);  // an address given: no use for the PMI server
}

void test_pmi_hydra_pmi_fd(void **) {
    // What mpiexec.hydra gives its ranks: no job id, no address; the PMI server's socket.
    LaunchInfo info = detect_ok({{"PMI_RANK", "1"},
                                 {"PMI_SIZE", "4"},
                                 {"PMI_FD", "6"},
                                 {"MPI_LOCALRANKID", "1"},
                                 {"MPI_LOCALNRANKS", "2"}});
    assert_string_equal(info.launcher.c_str(), "pmi");
    assert_int_equal(info.pmi_fd, 6);
    assert_true(info.spans_hosts);
    assert_false(info.rdv_via_pmix);
    assert_string_equal(info.rdv_addr.c_str(), "");
    assert_string_equal(info.secret.c_str(), "");  // rank 0 makes one
    assert_false(info.secret_from_file);
    // One host: the same channel (Hydra names no job id for a file).
    info = detect_ok({{"PMI_RANK", "0"},
                      {"PMI_SIZE", "2"},
                      {"PMI_FD", "3"},
                      {"MPI_LOCALRANKID", "0"},
                      {"MPI_LOCALNRANKS", "2"},
                      {"HVD_SECRET", "mine"}});
    assert_int_equal(info.pmi_fd, 3);
    assert_false(info.spans_hosts);
    assert_string_equal(info.secret.c_str(), "mine");
    // PMI_FD without PMI_RANK (another launcher's ranks): not Hydra's.
    info = detect_ok({{"OMPI_COMM_WORLD_RANK", "0"},
                      {"OMPI_COMM_WORLD_SIZE", "1"},
                      {"PMI_FD", "3"},
                      {"HVD_JOB_ID", "j"}});
    assert_int_equal(info.pmi_fd, -1);
    detect_fails({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"PMI_FD", "3"}, {"HVD_SECRET", "a b"}},
                 "HVD_SECRET holds whitespace");
    detect_fails({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"PMI_FD", "six"}}, "PMI_FD=six");
    detect_fails({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"PMI_FD", "-1"}}, "PMI_FD=-1");
}

// A PMIx launcher's job across hosts without an address: rank 0's endpoint goes through PMIx,
// with HVD_SECRET when given; on one host, or with an address, it does not.
void test_pmi_port_model(void **) {
    // mpiexec -pmi-port: PMI_PORT and PMI_ID only; the manager tells rank and size.
    Vars port = {{"PMI_PORT", "node1:40123"}, {"PMI_ID", "2"}, {"MPI_LOCALNRANKS", "3"}};
    assert_true(uses_pmi_port(lookup(port)));
    for (const char *rank_var :
         {"PMI_RANK", "HVD_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "RANK"}) {
        Vars named = port;
        named[rank_var] = "0";
        assert_false(uses_pmi_port(lookup(named)));  // another launcher names the rank
    }
    assert_false(uses_pmi_port(lookup({{"PMI_PORT", "node1:40123"}})));
    assert_false(uses_pmi_port(lookup({{"PMI_ID", "2"}})));
    assert_false(uses_pmi_port(lookup({{"PMI_PORT", ""}, {"PMI_ID", "2"}})));
    // What the manager told, given as the PMI_FD model's variables, meets through it.
    Vars told = port;
    told["PMI_RANK"] = "2";
    told["PMI_SIZE"] = "3";
    told["PMI_FD"] = "7";
    LaunchInfo info = detect_ok(told);
    assert_string_equal(info.launcher.c_str(), "pmi");
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.size, 3);
    assert_int_equal(info.pmi_fd, 7);
}

void test_pmix_rendezvous(void **) {
    Vars v = {{"OMPI_COMM_WORLD_RANK", "3"},
              {"OMPI_COMM_WORLD_SIZE", "8"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
              {"OMPI_MCA_ess_base_jobid", "77"},
              {"PMIX_NAMESPACE", "77"},
              {"PMIX_RANK", "3"}};
    LaunchInfo info = detect_ok(v);
    assert_true(info.rdv_via_pmix);
    assert_false(info.secret_from_file);
    assert_false(info.secret_derived);
    assert_string_equal(info.secret.c_str(), "");
    assert_string_equal(info.rdv_addr.c_str(), "");
    Vars with_secret = v;
    with_secret["HVD_SECRET"] = "given";
    assert_string_equal(detect_ok(with_secret).secret.c_str(), "given");
    // Slurm gives no local size: it may span hosts, or not (the file, should PMIx be missing).
    LaunchInfo slurm = detect_ok({{"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "2"},
                                  {"SLURM_JOB_ID", "5"},
                                  {"PMIX_NAMESPACE", "slurm.pmix.5.0"},
                                  {"PMIX_RANK", "0"}});
    assert_true(slurm.rdv_via_pmix);
    assert_true(slurm.secret_from_file);
    assert_string_equal(slurm.job_id.c_str(), "slurm.pmix.5.0");
    // srun's step on one node: one host, so the file; on several without PMIx: an error.
    LaunchInfo one_node = detect_ok({{"SLURM_PROCID", "1"},
                                     {"SLURM_NTASKS", "2"},
                                     {"SLURM_JOB_ID", "5"},
                                     {"SLURM_STEP_NUM_NODES", "1"},
                                     {"PMIX_NAMESPACE", "slurm.pmix.5.0"},
                                     {"PMIX_RANK", "1"}});
    assert_false(one_node.rdv_via_pmix);
    assert_int_equal(one_node.local_size, 2);
    assert_true(one_node.secret_from_file);
    Vars nodes = {{"SLURM_PROCID", "1"},
                  {"SLURM_NTASKS", "4"},
                  {"SLURM_JOB_ID", "5"},
                  {"SLURM_STEP_NUM_NODES", "2"}};
    detect_fails(nodes, "slurm launch: the job spans hosts (2 nodes)");
    nodes["PMIX_NAMESPACE"] = "slurm.pmix.5.0";
    nodes["PMIX_RANK"] = "1";
    LaunchInfo two_nodes = detect_ok(nodes);
    assert_true(two_nodes.rdv_via_pmix);
    assert_true(two_nodes.spans_hosts);
    assert_false(two_nodes.secret_from_file);  // no file to fall back to across nodes
    nodes["SLURM_STEP_NUM_NODES"] = "x";
    detect_fails(nodes, "SLURM_STEP_NUM_NODES=x is not an integer");
    // PMIx's rank is not this rank (a child of a rank, a remapped rank): not through PMIx.
    Vars other_rank = v;
    other_rank["PMIX_RANK"] = "0";
    detect_fails(other_rank, "spans hosts");
    // A launcher that is not Open MPI's nor Slurm's, with PMIx variables inherited.
    LaunchInfo inherited = detect_ok({{"HVD_RANK", "1"},
                                      {"HVD_SIZE", "2"},
                                      {"HVD_JOB_ID", "j"},
                                      {"PMIX_NAMESPACE", "77"},
                                      {"PMIX_RANK", "1"}});
    assert_false(inherited.rdv_via_pmix);
    assert_true(inherited.secret_from_file);
    Vars one_host = v;
    one_host["OMPI_COMM_WORLD_LOCAL_SIZE"] = "8";
    assert_false(detect_ok(one_host).rdv_via_pmix);
    Vars addressed = v;
    addressed["HVD_RENDEZVOUS_ADDR"] = "n1";
    addressed["HVD_RENDEZVOUS_PORT"] = "4000";
    addressed["HVD_SECRET"] = "s";
    assert_false(detect_ok(addressed).rdv_via_pmix);
    assert_false(detect_ok({{"OMPI_COMM_WORLD_RANK", "0"},
                            {"OMPI_COMM_WORLD_SIZE", "1"},
                            {"PMIX_NAMESPACE", "1"},
                            {"PMIX_RANK", "0"}})
                     .rdv_via_pmix);
}

// srun across nodes without PMIx or an address: the step's first node and reserved port, with
// HVD_SECRET (an unauthenticated job otherwise).
void test_slurm_step_rendezvous(void **) {
    Vars v = {{"SLURM_PROCID", "0"},
              {"SLURM_NTASKS", "4"},
              {"SLURM_JOB_ID", "5"},
              {"SLURM_STEP_NUM_NODES", "2"},
              {"SLURM_STEP_NODELIST", "gpu[007-008,012]-ib,login1"},
              {"SLURM_STEP_RESV_PORTS", "12000-12003"},
              {"SLURMD_NODENAME", "gpu007-ib"},
              {"HVD_SECRET", "s"}};
    LaunchInfo info = detect_ok(v);
    assert_string_equal(info.rdv_addr.c_str(), "gpu007-ib");
    assert_int_equal(info.rdv_port, 12000);
    assert_string_equal(info.secret.c_str(), "s");
    assert_false(info.rdv_via_pmix);
    v["SLURM_STEP_NODELIST"] = "rack[2-3]-node[10-11]";
    v["SLURMD_NODENAME"] = "rack2-node10";
    v["SLURM_STEP_RESV_PORTS"] = "13000";
    info = detect_ok(v);
    assert_string_equal(info.rdv_addr.c_str(), "rack2-node10");
    assert_int_equal(info.rdv_port, 13000);
    Vars elsewhere = v;
    elsewhere["SLURMD_NODENAME"] = "rack3-node11";
    detect_fails(elsewhere, "rank 0 runs on rack3-node11, not on the step's first node");
    elsewhere["SLURM_PROCID"] = "1";  // only rank 0 can tell
    assert_string_equal(detect_ok(elsewhere).rdv_addr.c_str(), "rack2-node10");
    Vars no_secret = v;
    no_secret.erase("HVD_SECRET");
    detect_fails(no_secret, "HVD_SECRET");
    Vars bad = v;
    bad["SLURM_STEP_NODELIST"] = "node[a-b]";
    detect_fails(bad, "SLURM_STEP_NODELIST=node[a-b] is not a Slurm host list");
    bad = v;
    bad["SLURM_STEP_RESV_PORTS"] = "70000-70003";
    detect_fails(bad, "SLURM_STEP_RESV_PORTS=70000-70003 is not a port range");
    // No reserved ports: no address to take.
    Vars no_ports = v;
    no_ports.erase("SLURM_STEP_RESV_PORTS");
    detect_fails(no_ports, "the job spans hosts (2 nodes)");
}

// A job the launcher says spans hosts, with neither an address nor PMIx, fails at once
// instead of waiting for a rendezvous file that the other hosts never see.
void test_spanning_hosts_need_address(void **) {
    Vars v = {{"OMPI_COMM_WORLD_RANK", "3"},
              {"OMPI_COMM_WORLD_SIZE", "8"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
              {"OMPI_MCA_ess_base_jobid", "77"}};
    detect_fails(v, "spans hosts (local size 4 of 8)");
    detect_fails(v, "HVD_RENDEZVOUS_ADDR");
    detect_fails(v, "PMIx");
    detect_fails(
        {{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}, {"MPI_LOCALNRANKS", "2"}, {"PMI_KVSNAME", "k"}},
        "pmi launch: the job spans hosts");
}

void test_slurm(void **) {
    LaunchInfo info = detect_ok({{"SLURM_PROCID", "7"},
                                 {"SLURM_NTASKS", "16"},
                                 {"SLURM_LOCALID", "3"},
                                 {"SLURM_JOB_ID", "123456"},
                                 {"SLURM_STEP_ID", "2"}});
    assert_string_equal(info.launcher.c_str(), "slurm");
    assert_int_equal(info.rank, 7);
    assert_int_equal(info.size, 16);
    assert_int_equal(info.local_rank, 3);
    assert_int_equal(info.local_size, 0);
    assert_string_equal(info.job_id.c_str(), "123456.2");
    // Without a step id the job id alone.
    LaunchInfo batch =
        detect_ok({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_ID", "99"}});
    assert_string_equal(batch.job_id.c_str(), "99");
}

// torchrun: MASTER_PORT belongs to torch's TCPStore, the rendezvous takes the next port.
void test_torchrun(void **) {
    LaunchInfo info = detect_ok({{"RANK", "1"},
                                 {"WORLD_SIZE", "2"},
                                 {"LOCAL_RANK", "1"},
                                 {"LOCAL_WORLD_SIZE", "2"},
                                 {"MASTER_ADDR", "127.0.0.1"},
                                 {"MASTER_PORT", "29500"},
                                 {"TORCHELASTIC_RUN_ID", "run42"}});
    assert_string_equal(info.launcher.c_str(), "torchrun");
    assert_int_equal(info.rank, 1);
    assert_int_equal(info.size, 2);
    assert_int_equal(info.local_rank, 1);
    assert_int_equal(info.local_size, 2);
    assert_string_equal(info.rdv_addr.c_str(), "127.0.0.1");
    assert_int_equal(info.rdv_port, 29501);
    assert_string_equal(info.job_id.c_str(), "run42");
    // Local size == size: one host, so a random secret through the private file.
    assert_true(info.secret_from_file);
    assert_false(info.secret_derived);
    assert_string_equal(info.secret.c_str(), "");
    // The explicit HVD_ address wins over MASTER_*.
    LaunchInfo over = detect_ok({{"RANK", "0"},
                                 {"WORLD_SIZE", "2"},
                                 {"HVD_SECRET", "k"},
                                 {"MASTER_ADDR", "a"},
                                 {"MASTER_PORT", "1000"},
                                 {"HVD_RENDEZVOUS_ADDR", "b"},
                                 {"HVD_RENDEZVOUS_PORT", "2000"}});
    assert_string_equal(over.rdv_addr.c_str(), "b");
    assert_int_equal(over.rdv_port, 2000);
}

// HVD_ beats Open MPI beats PMI beats Slurm beats torchrun.
void test_precedence(void **) {
    Vars all = {{"HVD_RANK", "0"},
                {"HVD_SIZE", "5"},
                {"OMPI_COMM_WORLD_RANK", "1"},
                {"OMPI_COMM_WORLD_SIZE", "5"},
                {"PMI_RANK", "2"},
                {"PMI_SIZE", "5"},
                {"SLURM_PROCID", "3"},
                {"SLURM_NTASKS", "5"},
                {"RANK", "4"},
                {"WORLD_SIZE", "5"},
                {"HVD_JOB_ID", "j"}};
    const char *order[][3] = {{"HVD_RANK", "HVD_SIZE", "hvdrun"},
                              {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "openmpi"},
                              {"PMI_RANK", "PMI_SIZE", "pmi"},
                              {"SLURM_PROCID", "SLURM_NTASKS", "slurm"},
                              {"RANK", "WORLD_SIZE", "torchrun"}};
    for (int i = 0; i < 5; ++i) {
        LaunchInfo info = detect_ok(all);
        assert_string_equal(info.launcher.c_str(), order[i][2]);
        assert_int_equal(info.rank, i);
        assert_string_equal(info.job_id.c_str(), "j");
        all.erase(order[i][0]);
        all.erase(order[i][1]);
    }
}

void test_job_id_precedence(void **) {
    Vars v = {{"SLURM_PROCID", "0"},       {"SLURM_NTASKS", "1"},    {"SLURM_JOB_ID", "77"},
              {"SLURM_STEP_ID", "0"},      {"PMIX_NAMESPACE", "ns"}, {"HVD_JOB_ID", "mine"},
              {"TORCHELASTIC_RUN_ID", "t"}};
    assert_string_equal(detect_ok(v).job_id.c_str(), "mine");
    v.erase("HVD_JOB_ID");
    assert_string_equal(detect_ok(v).job_id.c_str(), "ns");
    v.erase("PMIX_NAMESPACE");
    assert_string_equal(detect_ok(v).job_id.c_str(), "77.0");
    v.erase("SLURM_JOB_ID");
    assert_string_equal(detect_ok(v).job_id.c_str(), "t");
}

void test_empty_counts_as_unset(void **) {
    LaunchInfo info = detect_ok({{"HVD_RANK", ""},
                                 {"HVD_SIZE", ""},
                                 {"PMI_RANK", "0"},
                                 {"PMI_SIZE", "1"},
                                 {"HVD_JOB_ID", "x"},
                                 {"HVD_SECRET", ""}});
    assert_string_equal(info.launcher.c_str(), "pmi");
    assert_true(info.secret_from_file);
}

// The secret decision with a rendezvous address and no HVD_SECRET.
void test_secret_single_host_via_file(void **) {
    // Known to be on one host, no job id: the file is named after the address.
    LaunchInfo info = detect_ok({{"RANK", "0"},
                                 {"WORLD_SIZE", "3"},
                                 {"LOCAL_WORLD_SIZE", "3"},
                                 {"MASTER_ADDR", "10.0.0.5"},
                                 {"MASTER_PORT", "29500"}});
    assert_true(info.secret_from_file);
    assert_false(info.secret_derived);
    assert_string_equal(info.secret.c_str(), "");
    assert_string_equal(info.job_id.c_str(), "rdv-10.0.0.5:29501");
    // HVD_SECRET always wins.
    LaunchInfo given = detect_ok({{"RANK", "0"},
                                  {"WORLD_SIZE", "3"},
                                  {"LOCAL_WORLD_SIZE", "3"},
                                  {"MASTER_ADDR", "10.0.0.5"},
                                  {"MASTER_PORT", "29500"},
                                  {"HVD_SECRET", "given"}});
    assert_false(given.secret_from_file);
    assert_string_equal(given.secret.c_str(), "given");
}

void test_secret_multi_host_needs_secret(void **) {
    Vars v = {{"OMPI_COMM_WORLD_RANK", "1"},       {"OMPI_COMM_WORLD_SIZE", "4"},
              {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {"OMPI_MCA_ess_base_jobid", "99"},
              {"HVD_RENDEZVOUS_ADDR", "10.0.0.5"}, {"HVD_RENDEZVOUS_PORT", "4000"}};
    detect_fails(v, "HVD_SECRET");
    detect_fails(v, "HVD_ALLOW_UNAUTHENTICATED=1");
    detect_fails(v, "hvdrun");
    // Unknown local size (Slurm gives none) counts as possibly several hosts.
    detect_fails({{"SLURM_PROCID", "0"},
                  {"SLURM_NTASKS", "2"},
                  {"SLURM_JOB_ID", "5"},
                  {"HVD_RENDEZVOUS_ADDR", "n1"},
                  {"HVD_RENDEZVOUS_PORT", "4000"}},
                 "HVD_SECRET");
    Vars bad = v;
    bad["HVD_ALLOW_UNAUTHENTICATED"] = "maybe";
    detect_fails(bad, "HVD_ALLOW_UNAUTHENTICATED");
}

void test_secret_unauthenticated_opt_out(void **) {
    for (const char *name : {"HVD_ALLOW_UNAUTHENTICATED", "HOROVOD_ALLOW_UNAUTHENTICATED"}) {
        LaunchInfo info = detect_ok({{"OMPI_COMM_WORLD_RANK", "1"},
                                     {"OMPI_COMM_WORLD_SIZE", "4"},
                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                     {"OMPI_MCA_ess_base_jobid", "99"},
                                     {"HVD_RENDEZVOUS_ADDR", "10.0.0.5"},
                                     {"HVD_RENDEZVOUS_PORT", "4000"},
                                     {name, "1"}});
        assert_true(info.secret_derived);
        assert_false(info.secret_from_file);
        assert_string_equal(info.secret.c_str(),
                            sha256_hex("hvd derived secret|99|10.0.0.5:4000").c_str());
    }
}

void test_error_no_launcher(void **) {
    detect_fails({}, "no launcher found");
    detect_fails({{"HVD_SECRET", "x"}}, "HVD_RANK");
}

void test_error_half_set(void **) {
    detect_fails({{"OMPI_COMM_WORLD_RANK", "0"}, {"HVD_JOB_ID", "j"}},
                 "OMPI_COMM_WORLD_SIZE is not");
    detect_fails({{"WORLD_SIZE", "2"}, {"HVD_JOB_ID", "j"}}, "RANK is not");
}

void test_error_malformed_numbers(void **) {
    detect_fails({{"HVD_RANK", "1x"}, {"HVD_SIZE", "2"}, {"HVD_JOB_ID", "j"}}, "HVD_RANK=1x");
    detect_fails({{"HVD_RANK", "0"}, {"HVD_SIZE", " 2"}, {"HVD_JOB_ID", "j"}}, "HVD_SIZE");
    detect_fails({{"PMI_RANK", "0"}, {"PMI_SIZE", "99999999999"}, {"HVD_JOB_ID", "j"}}, "PMI_SIZE");
    detect_fails(
        {{"HVD_RANK", "0"}, {"HVD_SIZE", "1"}, {"HVD_LOCAL_RANK", "one"}, {"HVD_JOB_ID", "j"}},
        "HVD_LOCAL_RANK");
}

void test_error_rank_out_of_range(void **) {
    detect_fails({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}, {"HVD_JOB_ID", "j"}},
                 "SLURM_PROCID=4 is outside [0, 3]");
    detect_fails({{"RANK", "-1"}, {"WORLD_SIZE", "4"}, {"HVD_JOB_ID", "j"}}, "RANK=-1");
    detect_fails({{"HVD_RANK", "0"}, {"HVD_SIZE", "0"}, {"HVD_JOB_ID", "j"}}, "HVD_SIZE=0");
    detect_fails({{"HVD_RANK", "0"},
                  {"HVD_SIZE", "4"},
                  {"HVD_LOCAL_RANK", "2"},
                  {"HVD_LOCAL_SIZE", "2"},
                  {"HVD_JOB_ID", "j"}},
                 "HVD_LOCAL_RANK=2");
}

void test_error_bad_port(void **) {
    Vars base = {{"HVD_RANK", "0"}, {"HVD_SIZE", "1"}, {"HVD_RENDEZVOUS_ADDR", "h"}};
    for (const char *port : {"0", "65536", "http", "-5"}) {
        Vars v = base;
        v["HVD_RENDEZVOUS_PORT"] = port;
        detect_fails(v, "HVD_RENDEZVOUS_PORT");
    }
    detect_fails(base, "HVD_RENDEZVOUS_PORT is not");
    detect_fails({{"HVD_RANK", "0"}, {"HVD_SIZE", "1"}, {"HVD_RENDEZVOUS_PORT", "5"}},
                 "HVD_RENDEZVOUS_ADDR is not");
    detect_fails(
        {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "65535"}},
        "MASTER_PORT=65535");
    detect_fails({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "h"}}, "MASTER_PORT");
}

void test_error_no_rendezvous(void **) {
    detect_fails({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}, "HVD_RENDEZVOUS_ADDR");
    detect_fails({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}, "hvdrun");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hvdrun),
        cmocka_unit_test(test_horovod_aliases),
        cmocka_unit_test(test_openmpi_file_rendezvous),
        cmocka_unit_test(test_openmpi_pmix_namespace),
        cmocka_unit_test(test_pmi_hydra),
        cmocka_unit_test(test_pmix_rendezvous),
        cmocka_unit_test(test_spanning_hosts_need_address),
        cmocka_unit_test(test_slurm_step_rendezvous),
        cmocka_unit_test(test_slurm),
        cmocka_unit_test(test_torchrun),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_job_id_precedence),
        cmocka_unit_test(test_empty_counts_as_unset),
        cmocka_unit_test(test_secret_single_host_via_file),
        cmocka_unit_test(test_secret_multi_host_needs_secret),
        cmocka_unit_test(test_secret_unauthenticated_opt_out),
        cmocka_unit_test(test_pmi_hydra_pmi_fd),
        cmocka_unit_test(test_pmi_port_model),
        cmocka_unit_test(test_error_no_launcher),
        cmocka_unit_test(test_error_half_set),
        cmocka_unit_test(test_error_malformed_numbers),
        cmocka_unit_test(test_error_rank_out_of_range),
        cmocka_unit_test(test_error_bad_port),
        cmocka_unit_test(test_error_no_rendezvous),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
