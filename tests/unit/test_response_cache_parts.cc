// SPDX-License-Identifier: Apache-2.0
// The response cache's parts against hand-computed expectations: bit vectors, the round
// table, vote encoding, the cache itself (lookups, puts, touched bits, memos) and rank 0's
// LRU bit allocator. Jobs that use the cache: test_response_cache.cc.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "negotiation/cache_bit_allocator.h"
#include "negotiation/cache_round.h"
#include "negotiation/response_cache.h"

namespace {

using hvd::negotiation::BitVector;
using hvd::negotiation::CacheBitAllocator;
using hvd::negotiation::OpMeta;
using hvd::negotiation::OpType;
using hvd::negotiation::Response;
using hvd::negotiation::ResponseCache;
using hvd::negotiation::RoundOutcome;
using hvd::negotiation::RoundTable;
using hvd::negotiation::RoundVote;

// ------------------------------------------------------------------ parts

BitVector bits_of(std::initializer_list<uint32_t> bits) {
    BitVector v;
    for (uint32_t b : bits)
        v.set(b);
    return v;
}

void test_bit_vector(void **) {
    BitVector a = bits_of({0, 5, 64, 200});
    assert_true(a.test(200));
    assert_false(a.test(199));
    assert_false(a.test(100000));
    BitVector b = bits_of({5, 200, 300});
    BitVector both = a;
    both.and_with(b);
    assert_true(both.bits() == std::vector<uint32_t>({5, 200}));
    BitVector either = a;
    either.or_with(b);
    assert_true(either.bits() == std::vector<uint32_t>({0, 5, 64, 200, 300}));
    BitVector none = bits_of({1});
    none.and_with(BitVector());
    assert_true(none.empty());
}

template <typename F>
void expect_transport_error(F f, const char *needle) {
    try {
        f();
        fail_msg("expected an error containing '%s'", needle);
    } catch (const hvd::Error &e) {
        assert_int_equal(e.status(), HVD_ERR_TRANSPORT);
        if (std::strstr(e.what(), needle) == nullptr)
            fail_msg("'%s' does not contain '%s'", e.what(), needle);
    }
}

hvd::negotiation::SetVote set_vote(uint16_t set_id, std::initializer_list<uint32_t> ready,
                                   std::initializer_list<uint32_t> invalid = {},
                                   bool joined = false) {
    hvd::negotiation::SetVote v;
    v.set_id = set_id;
    v.ready = bits_of(ready);
    v.invalid = bits_of(invalid);
    v.joined = joined;
    return v;
}

// A vote on the global set only.
RoundVote vote(uint64_t round, std::initializer_list<uint32_t> ready,
               std::initializer_list<uint32_t> invalid = {}, bool joined = false) {
    RoundVote v;
    v.round = round;
    v.sets.push_back(set_vote(0, ready, invalid, joined));
    return v;
}

// Members of the sets of test_round_table_combines_per_set: 0 = {0,1,2,3}, 1 = {0,1},
// 2 = {1,2,3}, 3 = {3}; 9 unknown.
const std::vector<int32_t> *test_members(uint16_t id) {
    static const std::vector<int32_t> all{0, 1, 2, 3}, one{0, 1}, two{1, 2, 3}, three{3};
    switch (id) {
        case 0:
            return &all;
        case 1:
            return &one;
        case 2:
            return &two;
        case 3:
            return &three;
        default:
            return nullptr;
    }
}

const hvd::negotiation::SetOutcome *outcome_of(const RoundOutcome &o, uint16_t id) {
    for (const auto &s : o.sets)
        if (s.set_id == id) return &s;
    return nullptr;
}

void test_round_table_combines_votes(void **) {
    RoundTable t(3);
    RoundVote zero = vote(1, {1, 2, 3}, {}, false);
    zero.batches = 7;
    zero.fusion_threshold = 4096;
    zero.hierarchical_ops = 6;
    t.add(0, zero, 0);
    t.add(2, vote(1, {2, 3, 9}, {40}), 0);
    assert_false(t.complete(1));
    t.add(1, vote(1, {3, 2}, {}, true), 0);
    t.add(2, vote(2, {}), 0);  // a rank already in the next round
    assert_true(t.complete(1));
    assert_true(t.batches_before(1) == 7);
    RoundOutcome o = t.take(1, test_members);
    assert_int_equal(o.sets.size(), 1);
    assert_int_equal(o.sets[0].set_id, 0);
    assert_true(o.sets[0].ready_everywhere.bits() == std::vector<uint32_t>({2, 3}));
    assert_true(o.sets[0].invalid.bits() == std::vector<uint32_t>({40}));
    assert_true(o.sets[0].any_joined);
    assert_true(o.batches == 7);
    assert_int_equal(o.fusion_threshold, 4096);
    assert_int_equal(o.hierarchical_ops, 6);  // rank 0's
    assert_false(t.complete(1));
    assert_true(t.has_vote(2, 2));
    expect_transport_error([&] { t.add(2, vote(2, {}), 1); }, "voted twice");
    expect_transport_error([&] { t.add(0, vote(1, {}), 1); }, "has finished 1");
    expect_transport_error([&] { t.add(0, vote(4, {}), 1); }, "round 4");
    expect_transport_error([&] { t.add(3, vote(2, {}), 1); }, "unknown rank 3");
}

// Each set's outcome comes from its members' votes alone: a member without an entry has
// nothing ready, a non-member's entry is not counted, unknown sets are left out.
void test_round_table_combines_per_set(void **) {
    RoundTable t(4);
    RoundVote v0, v1, v2, v3;
    v0.sets = {set_vote(0, {1, 2}), set_vote(1, {5, 6}, {9}), set_vote(9, {1})};
    v0.batches = 3;
    v1.sets = {set_vote(0, {1, 2}), set_vote(1, {5, 7}), set_vote(2, {0, 4}, {}, true)};
    v2.sets = {set_vote(0, {2}), set_vote(1, {5, 6, 7}, {8}), set_vote(2, {0, 4}, {3})};
    v3.sets = {set_vote(0, {2, 3}), set_vote(3, {11})};  // none for set 2: nothing ready
    RoundVote *votes[] = {&v0, &v1, &v2, &v3};
    for (int32_t r = 0; r < 4; ++r) {
        votes[r]->round = 1;
        t.add(r, *votes[r], 0);
    }
    RoundOutcome o = t.take(1, test_members);
    assert_int_equal(o.sets.size(), 4);  // 0, 1, 2, 3; not 9
    assert_true(o.batches == 3);
    const auto *s0 = outcome_of(o, 0), *s1 = outcome_of(o, 1), *s2 = outcome_of(o, 2),
               *s3 = outcome_of(o, 3);
    assert_non_null(s0);
    assert_non_null(s1);
    assert_non_null(s2);
    assert_non_null(s3);
    assert_null(outcome_of(o, 9));
    assert_true(s0->ready_everywhere.bits() == std::vector<uint32_t>({2}));
    assert_true(s1->ready_everywhere.bits() == std::vector<uint32_t>({5}));  // rank 2 not in 1
    assert_true(s1->invalid.bits() == std::vector<uint32_t>({9}));           // nor its 8
    assert_false(s1->any_joined);
    assert_true(s2->ready_everywhere.empty());
    assert_true(s2->invalid.bits() == std::vector<uint32_t>({3}));
    assert_true(s2->any_joined);
    assert_true(s3->ready_everywhere.bits() == std::vector<uint32_t>({11}));
}

// A rank may hold back an empty vote only where the round waits for nothing but its own ready
// ops: sets it is a member of, no invalid bits, no join.
void test_round_table_awaits_only(void **) {
    RoundTable t(4);
    assert_false(t.awaits_only(1, 1, test_members));  // no vote yet
    RoundVote v0;
    v0.round = 1;
    v0.sets = {set_vote(0, {1, 2}), set_vote(1, {5})};
    t.add(0, v0, 0);
    assert_true(t.awaits_only(1, 1, test_members));   // rank 1 is in sets 0 and 1
    assert_false(t.awaits_only(1, 2, test_members));  // rank 2 is not in set 1
    RoundVote v3;
    v3.round = 1;
    v3.sets = {set_vote(3, {11})};
    t.add(3, v3, 0);
    assert_false(t.awaits_only(1, 1, test_members));  // set 3 can run without rank 1
    RoundTable u(4);
    RoundVote w;
    w.round = 1;
    w.sets = {set_vote(0, {}, {4})};
    u.add(2, w, 0);
    assert_false(u.awaits_only(1, 1, test_members));  // an invalid bit: the round has news
    RoundTable j(4);
    w.sets = {set_vote(0, {}, {}, true)};
    j.add(2, w, 0);
    assert_false(j.awaits_only(1, 1, test_members));  // a join
    RoundTable e(4);
    w.sets = {};
    e.add(2, w, 0);
    assert_false(e.awaits_only(1, 1, test_members));  // an empty vote waits for nobody
}

// Rank 0's prompt where votes are relayed: the votes it holds, merged per set.
void test_round_table_merged(void **) {
    RoundTable t(4);
    assert_true(t.merged(1).sets.empty());  // no vote yet
    RoundVote v0 = vote(1, {1, 64});
    v0.sets.push_back(set_vote(3, {}, {2}));
    t.add(0, v0, 0);
    RoundVote v2 = vote(1, {5});
    v2.sets.push_back(set_vote(5, {}, {}, true));
    t.add(2, v2, 0);
    t.add(3, vote(2, {7}), 0);  // another round's vote stays out
    RoundVote m = t.merged(1);
    assert_int_equal(m.sets.size(), 3);
    assert_int_equal(m.sets[0].set_id, 0);
    assert_true(m.sets[0].ready.bits() == std::vector<uint32_t>({1, 5, 64}));
    assert_true(m.sets[0].invalid.empty());
    assert_false(m.sets[0].joined);
    assert_int_equal(m.sets[1].set_id, 3);
    assert_true(m.sets[1].ready.empty());
    assert_true(m.sets[1].invalid.bits() == std::vector<uint32_t>({2}));
    assert_int_equal(m.sets[2].set_id, 5);
    assert_true(m.sets[2].joined);
    // A rank that sees only the merged vote decides as if it saw both: rank 1 would hold back
    // for set 0's ready ops, were it not for set 3's invalid bit and set 5's join.
    RoundTable seen(4);
    RoundVote ready_only = t.merged(1);
    ready_only.round = 1;
    ready_only.sets.resize(1);
    seen.add(0, ready_only, 0);
    assert_true(seen.awaits_only(1, 1, test_members));
}

void test_vote_encoding(void **) {
    RoundVote v = vote(42, {0, 63, 64, 1000}, {7}, true);
    v.sets.push_back(set_vote(5, {3}, {}, false));
    v.sets.push_back(set_vote(65535, {}, {65535}, true));
    v.batches = 9;
    v.fusion_threshold = 1 << 20;
    v.hierarchical_ops = 0x1fe;
    RoundVote back = hvd::negotiation::decode_vote(hvd::negotiation::encode_vote(v));
    assert_true(back.round == 42);
    assert_int_equal(back.sets.size(), 3);
    assert_int_equal(back.sets[0].set_id, 0);
    assert_true(back.sets[0].ready.bits() == v.sets[0].ready.bits());
    assert_true(back.sets[0].invalid.bits() == std::vector<uint32_t>({7}));
    assert_true(back.sets[0].joined);
    assert_int_equal(back.sets[1].set_id, 5);
    assert_true(back.sets[1].ready.bits() == std::vector<uint32_t>({3}));
    assert_false(back.sets[1].joined);
    assert_int_equal(back.sets[2].set_id, 65535);
    assert_true(back.sets[2].invalid.bits() == std::vector<uint32_t>({65535}));
    assert_true(back.sets[2].joined);
    assert_true(back.batches == 9);
    assert_int_equal(back.fusion_threshold, 1 << 20);
    assert_int_equal(back.hierarchical_ops, 0x1fe);
    std::string bytes = hvd::negotiation::encode_vote(v);
    expect_transport_error(
        [&] { hvd::negotiation::decode_vote(bytes.substr(0, bytes.size() - 3)); }, "truncated");
    expect_transport_error([&] { hvd::negotiation::decode_vote(bytes + "x"); }, "trailing");
    RoundVote unordered = v;
    std::swap(unordered.sets[0], unordered.sets[1]);
    expect_transport_error(
        [&] { hvd::negotiation::decode_vote(hvd::negotiation::encode_vote(unordered)); },
        "out of order");
}

void test_outcome_encoding(void **) {
    hvd::negotiation::RoundOutcome o;
    o.round = 17;
    o.sets.resize(2);
    o.sets[0].ready_everywhere.set(0);
    o.sets[0].ready_everywhere.set(64);
    o.sets[0].ready_everywhere.set(1000);
    o.sets[0].invalid.set(7);
    o.sets[1].set_id = 65535;
    o.sets[1].any_joined = true;
    o.batches = 3;
    o.fusion_threshold = 64 << 20;
    o.hierarchical_ops = 0x2;
    const std::string bytes = hvd::negotiation::encode_outcome(o);
    hvd::negotiation::RoundOutcome back = hvd::negotiation::decode_outcome(bytes);
    assert_true(back.round == 17);
    assert_int_equal(back.sets.size(), 2);
    assert_int_equal(back.sets[0].set_id, 0);
    assert_true(back.sets[0].ready_everywhere.bits() == std::vector<uint32_t>({0, 64, 1000}));
    assert_true(back.sets[0].invalid.bits() == std::vector<uint32_t>({7}));
    assert_false(back.sets[0].any_joined);
    assert_int_equal(back.sets[1].set_id, 65535);
    assert_true(back.sets[1].ready_everywhere.empty());
    assert_true(back.sets[1].any_joined);
    assert_true(back.batches == 3);
    assert_int_equal(back.fusion_threshold, 64 << 20);
    assert_int_equal(back.hierarchical_ops, 0x2);
    expect_transport_error(
        [&] { hvd::negotiation::decode_outcome(bytes.substr(0, bytes.size() - 1)); }, "truncated");
    expect_transport_error([&] { hvd::negotiation::decode_outcome(bytes + "x"); }, "trailing");
    hvd::negotiation::RoundOutcome unordered = o;
    std::swap(unordered.sets[0], unordered.sets[1]);
    expect_transport_error(
        [&] { hvd::negotiation::decode_outcome(hvd::negotiation::encode_outcome(unordered)); },
        "out of order");
}

// The vote's way (cache_round.h): between two ranks directly, from three through rank 0.
void test_votes_relayed_from_three_ranks(void **) {
    assert_false(hvd::negotiation::votes_relayed(1));
    assert_false(hvd::negotiation::votes_relayed(2));
    assert_true(hvd::negotiation::votes_relayed(3));
    assert_true(hvd::negotiation::votes_relayed(64));
}

OpMeta meta(const char *name, std::vector<int64_t> shape) {
    OpMeta m;
    m.name = name;
    m.type = OpType::kAllreduce;
    m.dtype = HVD_DTYPE_FLOAT32;
    m.shape = std::move(shape);
    return m;
}

Response response_for(const OpMeta &m) {
    Response r;
    r.name = m.name;
    r.type = m.type;
    r.dtype = m.dtype;
    r.shape = m.shape;
    return r;
}

void test_cache_lookup_put_and_touched(void **) {
    ResponseCache c;
    OpMeta a = meta("a", {4});
    uint32_t bit = 99;
    assert_true(c.lookup(a, &bit) == ResponseCache::Lookup::kMiss);
    assert_true(c.put(3, response_for(a), &a) == std::vector<uint32_t>({3}));
    assert_true(c.touched(3));
    c.clear_touched();
    assert_false(c.touched(3));
    assert_true(c.lookup(a, &bit) == ResponseCache::Lookup::kHit);
    assert_int_equal(bit, 3);
    OpMeta wider = meta("a", {5});
    assert_true(c.lookup(wider, &bit) == ResponseCache::Lookup::kChanged);
    OpMeta other_set = a;
    other_set.set_id = 2;
    assert_true(c.lookup(other_set, &bit) == ResponseCache::Lookup::kMiss);
    // The name moves to another bit: both bits change.
    assert_true(c.put(5, response_for(wider), &wider) == std::vector<uint32_t>({5, 3}));
    assert_null(c.response(3));
    assert_true(c.lookup(wider, &bit) == ResponseCache::Lookup::kHit && bit == 5);
    // An entry this rank took part in without enqueuing never hits here.
    OpMeta b = meta("b", {1});
    c.put(6, response_for(b), nullptr);
    assert_true(c.lookup(b, &bit) == ResponseCache::Lookup::kChanged);
    c.clear_touched();
    c.erase(6);
    assert_true(c.touched(6));
    assert_true(c.lookup(b, &bit) == ResponseCache::Lookup::kMiss);
    assert_int_equal(c.size(), 1);

    Response ok = response_for(a);
    assert_true(ResponseCache::cacheable(ok));
    Response failed = ok;
    failed.status = HVD_ERR_MISMATCH;
    Response grouped = ok;
    grouped.group = "g";
    assert_true(ResponseCache::cacheable(grouped));  // a group is kept together by the engine
    Response in_set = ok;
    in_set.set_id = 1;
    assert_true(ResponseCache::cacheable(in_set));  // in the cache of set 1
    Response barrier = ok;
    barrier.type = OpType::kBarrier;
    Response one_rank = ok;
    one_rank.addressee = 1;
    for (const Response &r : {failed, barrier, one_rank})
        assert_false(ResponseCache::cacheable(r));
}

// A lookup through a memo answers as a plain lookup does, whatever happened to the name or
// its bit since the memo was made: random puts (a name moving bits, a bit taking another
// name, parameters changing) and erases, with one memo per name kept throughout.
void test_memo_lookup_matches_plain_lookup(void **) {
    std::mt19937 rng(5);
    ResponseCache c;
    const char *names[] = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};
    ResponseCache::Memo memos[8];
    for (int step = 0; step < 20000; ++step) {
        size_t k = rng() % 8;
        OpMeta m = meta(names[k], {static_cast<int64_t>(1 + rng() % 2)});
        if (rng() % 4 == 0) m.set_id = static_cast<uint16_t>(rng() % 2);
        switch (rng() % 4) {
            case 0:
                if (m.set_id == 0) c.put(rng() % 12, response_for(m), rng() % 5 ? &m : nullptr);
                break;
            case 1:
                c.erase(rng() % 12);
                break;
            default: {
                uint32_t plain_bit = 99, memo_bit = 98;
                ResponseCache::Lookup plain = c.lookup(m, &plain_bit);
                ResponseCache::Lookup via = c.lookup(m, &memo_bit, &memos[k]);
                assert_int_equal(static_cast<int>(plain), static_cast<int>(via));
                if (plain != ResponseCache::Lookup::kMiss) assert_int_equal(plain_bit, memo_bit);
            }
        }
    }
}

void test_bit_allocator_evicts_least_recently_used(void **) {
    CacheBitAllocator bits;
    assert_int_equal(bits.assign("a", 2), 0);
    assert_int_equal(bits.assign("b", 2), 1);
    assert_int_equal(bits.assign("a", 2), 0);  // known name: same bit, now most recent
    assert_int_equal(bits.assign("c", 2), 1);  // evicts b
    bits.used(1);                              // c more recent than a
    assert_int_equal(bits.assign("d", 2), 0);  // evicts a
    bits.release(1, "not c");                  // stale release: kept
    assert_int_equal(bits.assign("c", 2), 1);
    bits.release(1, "c");
    assert_int_equal(bits.assign("e", 3), 1);  // released bits are reused first
    assert_int_equal(bits.assign("f", 3), 2);
    assert_int_equal(bits.assign("g", 0), -1);  // capacity 0: everything evicted, cache off
    assert_int_equal(bits.assign("d", 1), 0);   // d was evicted: a fresh assignment
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bit_vector),
        cmocka_unit_test(test_round_table_combines_votes),
        cmocka_unit_test(test_round_table_combines_per_set),
        cmocka_unit_test(test_round_table_awaits_only),
        cmocka_unit_test(test_round_table_merged),
        cmocka_unit_test(test_vote_encoding),
        cmocka_unit_test(test_outcome_encoding),
        cmocka_unit_test(test_votes_relayed_from_three_ranks),
        cmocka_unit_test(test_cache_lookup_put_and_touched),
        cmocka_unit_test(test_memo_lookup_matches_plain_lookup),
        cmocka_unit_test(test_bit_allocator_evicts_least_recently_used),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
