// SPDX-License-Identifier: Apache-2.0
// The messages ranks send each other, as the receiving rank reads them. The input's first byte
// picks the kind, the rest is the message:
//   0  a ready report (worker -> coordinator), then handed to a coordinator of 2 ranks from
//      both (its ops complete, so validation, join and process-set handling run on it)
//   1  a batch of coordinator responses
//   2  a response-cache vote, then added to a round table of 3 ranks and combined
//   3  the "host" entries every rank publishes at init (entries separated by NUL bytes)
//   4  a relayed cache round's outcome (coordinator -> worker)
// Whatever decodes must encode back to bytes that decode to the same thing. Malformed bytes
// must end in hvd::Error, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "negotiation/cache_round.h"
#include "negotiation/coordinator.h"
#include "negotiation/op_meta.h"
#include "negotiation/wire_protocol.h"

namespace {

using namespace hvd::negotiation;

void ready_report(const std::string &msg) {
    ReadyReport report = decode_ready(msg);
    std::string again = encode_ready(report);
    if (encode_ready(decode_ready(again)) != again) __builtin_trap();
    Coordinator coord(2);
    std::vector<Response> out;
    coord.add_ready(0, report, &out);
    coord.add_ready(1, report, &out);
    for (const Coordinator::Waiting &w : coord.waiting())
        coord.expire(w.set_id, w.name, HVD_ERR_TIMED_OUT, "fuzz", &out);
    ResponseBatch batch;
    batch.responses = std::move(out);
    std::string bytes = encode_batch(batch);
    if (encode_batch(decode_batch(bytes)) != bytes) __builtin_trap();
}

void response_batch(const std::string &msg) {
    std::string again = encode_batch(decode_batch(msg));
    if (encode_batch(decode_batch(again)) != again) __builtin_trap();
}

void cache_vote(const std::string &msg) {
    RoundVote vote = decode_vote(msg);
    std::string again = encode_vote(vote);
    if (encode_vote(decode_vote(again)) != again) __builtin_trap();
    RoundTable table(3);
    uint64_t round = vote.round;
    uint64_t done = round == 0 ? 0 : round - 1;
    for (int32_t r = 0; r < 3; ++r)
        table.add(r, vote, done);
    if (!table.complete(round)) __builtin_trap();
    // Every set has all three ranks: each set's outcome is the vote's own entry.
    static const std::vector<int32_t> all{0, 1, 2};
    RoundOutcome outcome = table.take(round, [](uint16_t) { return &all; });
    if (outcome.sets.size() != vote.sets.size()) __builtin_trap();
    for (size_t i = 0; i < vote.sets.size(); ++i)
        if (outcome.sets[i].set_id != vote.sets[i].set_id ||
            outcome.sets[i].ready_everywhere.bits() != vote.sets[i].ready.bits())
            __builtin_trap();
}

void round_outcome(const std::string &msg) {
    RoundOutcome outcome = decode_outcome(msg);
    std::string again = encode_outcome(outcome);
    if (again.size() > msg.size()) __builtin_trap();  // trailing zero words are dropped
    if (encode_outcome(decode_outcome(again)) != again) __builtin_trap();
}

void host_entries(const std::string &msg) {
    std::vector<std::string> entries;
    size_t start = 0;
    for (size_t nul; (nul = msg.find('\0', start)) != std::string::npos; start = nul + 1)
        entries.push_back(msg.substr(start, nul - start));
    entries.push_back(msg.substr(start));
    std::vector<std::string> hosts = hosts_of_same_protocol(entries, 0);
    if (hosts.size() != entries.size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    std::string msg(reinterpret_cast<const char *>(data + 1), size - 1);
    try {
        switch (data[0] % 5) {
            case 0:
                ready_report(msg);
                break;
            case 1:
                response_batch(msg);
                break;
            case 2:
                cache_vote(msg);
                break;
            case 3:
                host_entries(msg);
                break;
            default:
                round_outcome(msg);
                break;
        }
    } catch (const hvd::Error &) {
    }
    return 0;
}
