// SPDX-License-Identifier: Apache-2.0
// Negotiation rounds of the response cache. Every process set has a cache of its own, with
// its own bit numbers (response_cache.h). In round k every rank votes: per process set it
// belongs to, the cached ops of that set it has ready (a bit vector), the cached ops it found
// changed or waited on too long (invalid bits), and whether it has joined the set. All n
// votes of round k say what every rank knows: per set, the ops every member of the set has
// ready (AND over the set's members) run, the invalid ones (OR over the members) leave the
// set's cache and go to the coordinator instead; the votes of ranks outside a set say nothing
// about it (RoundOutcome).
//
// How the votes travel depends on the job's size (votes_relayed):
// - Two ranks: each sends the other its vote; each combines both. One message each way, one
//   hop.
// - Three or more: relayed through rank 0. Each rank sends its vote to rank 0 alone; rank 0
//   combines the n votes and sends every other rank the outcome. When rank 0 votes, it
//   prompts the ranks that have not voted yet in the round with the votes it holds, merged
//   (RoundTable::merged): a rank with nothing ready then votes, or holds back its empty vote
//   as it would seeing every vote. Between 2(n-1) and 3(n-1) messages a round in two hops,
//   where an exchange among all ranks takes n(n-1) in one: the count of messages, not hops,
//   is what costs as jobs grow and ranks share CPUs.
//
// Rounds are job-wide: every rank votes in every round, whatever sets it is in. Rank 0's
// vote also places the round in the job's global order: `batches` is how many batches of
// coordinator responses rank 0 had sent the recipient before this round, and every batch
// carries how many rounds rank 0 had started before it. Each rank runs a round after exactly
// those batches, so rounds and coordinator responses interleave the same way on every rank
// (a set's responses reach only its members, at the same point relative to the rounds).
// Rank 0's vote also carries the fusion threshold all ranks use for the round, and the op types
// whose ops of the round may run on the hosts' hierarchy.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvd::negotiation {

// Process set ids are 16-bit.
constexpr uint32_t kMaxSetId = 0xffff;

// A set of cache bits as 64-bit words.
class BitVector {
  public:
    void set(uint32_t bit);
    void reset(uint32_t bit);
    bool test(uint32_t bit) const;
    bool empty() const;
    void and_with(const BitVector &o);
    void or_with(const BitVector &o);
    // Set bits, ascending.
    std::vector<uint32_t> bits() const;
    std::vector<uint64_t> &words() { return words_; }
    const std::vector<uint64_t> &words() const { return words_; }

  private:
    std::vector<uint64_t> words_;
};

// One rank's vote on one process set's cache (a set it is a member of).
struct SetVote {
    uint16_t set_id = 0;
    BitVector ready;
    BitVector invalid;
    bool joined = false;
};

struct RoundVote {
    uint64_t round = 0;
    // Ascending set ids, one entry at most per set; a set without an entry: nothing ready,
    // nothing invalid, not joined.
    std::vector<SetVote> sets;
    // Rank 0 only.
    uint64_t batches = 0;
    int64_t fusion_threshold = 0;
    uint32_t hierarchical_ops = 0;  // op_type_bit of each
};

std::string encode_vote(const RoundVote &v);
// Throws hvd::Error(HVD_ERR_TRANSPORT) on a malformed vote.
RoundVote decode_vote(const std::string &bytes);

// Whether a job of `size` ranks relays its votes through rank 0 (three ranks or more).
inline bool votes_relayed(int32_t size) {
    return size >= 3;
}

// What every member of a set concludes about it from the votes of one round.
struct SetOutcome {
    uint16_t set_id = 0;
    BitVector ready_everywhere;  // AND of the members' ready bits
    BitVector invalid;           // OR of the members' invalid bits
    bool any_joined = false;     // some member has joined the set
};

// What every rank concludes from the n votes of one round.
struct RoundOutcome {
    uint64_t round = 0;
    std::vector<SetOutcome> sets;  // ascending set ids: the sets some member voted on
    uint64_t batches = 0;          // from rank 0's vote: batches to run before this round
    int64_t fusion_threshold = 0;
    uint32_t hierarchical_ops = 0;
};

// A relayed round's outcome, as rank 0 sends it (`batches` the recipient's).
std::string encode_outcome(const RoundOutcome &o);
// Throws hvd::Error(HVD_ERR_TRANSPORT) on a malformed outcome.
RoundOutcome decode_outcome(const std::string &bytes);

// The members (global ranks) of a set as this rank knows it at the round, or null for a set
// it does not know.
using SetMembers = std::function<const std::vector<int32_t> *(uint16_t set_id)>;

// Votes received, by round. Rounds advance in step: a rank votes in round k + 1 only after
// running round k, which needs everybody's vote of round k.
class RoundTable {
  public:
    explicit RoundTable(int32_t size) : size_(size) {}
    // Throws hvd::Error(HVD_ERR_TRANSPORT) for a vote of a finished or far future round, a
    // second vote of one rank in one round, or a rank out of range.
    void add(int32_t rank, RoundVote vote, uint64_t rounds_done);
    bool has_vote(uint64_t round, int32_t rank) const;
    bool any_vote(uint64_t round) const { return votes_.count(round) != 0; }
    bool complete(uint64_t round) const;
    // Whether the votes received for `round` ask nothing of `rank` but its own ready ops:
    // some vote has ready bits, every set with ready bits has `rank` as a member, and no vote
    // carries invalid bits or a join. An empty vote of `rank` could then agree on nothing.
    bool awaits_only(uint64_t round, int32_t rank, const SetMembers &members) const;
    // The votes received for `round` merged into one, per set: ready bits and invalid bits
    // ORed, joined if any joined (the sets ascending; round, batches and the rest zero). What a
    // rank that sees only this vote needs for awaits_only: rank 0's prompt where votes are
    // relayed.
    RoundVote merged(uint64_t round) const;
    // Rank 0's `batches` in a round it has voted in.
    uint64_t batches_before(uint64_t round) const { return votes_.at(round)[0]->batches; }
    // Combines and forgets the votes of a complete round: per set, over its members' votes
    // (sets unknown to members() are left out).
    RoundOutcome take(uint64_t round, const SetMembers &members);
    // Forgets the votes received for `round` (a relayed round whose outcome came from rank 0).
    void drop(uint64_t round) { votes_.erase(round); }

  private:
    int32_t size_;
    std::map<uint64_t, std::vector<std::optional<RoundVote>>> votes_;
};

}  // namespace hvd::negotiation
