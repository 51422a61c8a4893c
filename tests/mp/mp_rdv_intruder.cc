// SPDX-License-Identifier: Apache-2.0
// mp_rdv_intruder ADDR PORT JOB_ID SIZE: the audit's attack on a launch without HVD_SECRET.
// Computes the secret an outsider could derive from the job id and address (what libhvd
// used before jobs had a random one) and tries to join the rendezvous server at ADDR:PORT as
// rank 1. Exit 0: the server refused it; 1: it got in; 2: no server answered within 30 s.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bootstrap/kv_store.h"
#include "bootstrap/sha256.h"
#include "common/deadline.h"
#include "common/error.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: mp_rdv_intruder ADDR PORT JOB_ID SIZE\n");
        return 64;
    }
    const std::string addr = argv[1];
    const int port = std::atoi(argv[2]);
    const std::string derived = hvd::bootstrap::sha256_hex(
        "hvd derived secret|" + std::string(argv[3]) + "|" + addr + ":" + std::to_string(port));
    try {
        hvd::bootstrap::KvClient kv(addr, port, derived, 1, std::atoi(argv[4]),
                                    hvd::Deadline::after_ms(30000));
        std::printf("intruder: joined the rendezvous as rank 1\n");
        return 1;
    } catch (const hvd::Error &e) {
        if (e.status() == HVD_ERR_TIMED_OUT) {
            std::printf("intruder: no server answered: %s\n", e.what());
            return 2;
        }
        std::printf("intruder: refused: %s\n", e.what());
        return 0;
    }
}
