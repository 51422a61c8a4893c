// SPDX-License-Identifier: Apache-2.0
// The integrity of rendezvous frames after the handshake (bootstrap/frame_mac.h). Sealed
// frames verify between the two ends of one connection, in order, and nowhere else. Through a
// man in the middle on a real socket, a frame altered, replayed, reordered or spliced from
// another connection closes that connection with "frame authentication failed" naming the
// rank, never reaches the server's table, and the server goes on serving the other ranks.
#include <string>
#include <thread>
#include <vector>

#include "assert_contains.h"
#include "bootstrap/frame_mac.h"
#include "bootstrap/hmac.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/kv_store.h"
#include "bootstrap/socket_io.h"
#include "kv_mitm.h"
#include "kv_test_util.h"

using namespace hvd;
using namespace hvd::bootstrap;
using namespace kvtest;

namespace {

const std::string kServerNonce(kNonceBytes, 's');
const std::string kClientNonce(kNonceBytes, 'c');
const char *kAuthFailed = "frame authentication failed";

FrameMac client_end(const std::string &client_nonce = kClientNonce,
                    const std::string &secret = kSecret) {
    return FrameMac(secret, kServerNonce, client_nonce, FrameMac::Side::kClient);
}

FrameMac server_end() {
    return FrameMac(kSecret, kServerNonce, kClientNonce, FrameMac::Side::kServer);
}

// The frames `mac` takes from `bytes` until it throws, and what it threw.
struct Received {
    std::vector<Frame> frames;
    Outcome error;
};

Received receive(FrameMac &mac, const std::string &bytes) {
    FrameDecoder in(kMaxFrameBytes);
    *in.buffer() = bytes;
    Received r;
    r.error = catching([&] {
        Frame f;
        while (mac.next(&in, &f))
            r.frames.push_back(f);
    });
    return r;
}

void assert_refused(const Received &r, size_t frames_before, const std::string &frame_no) {
    assert_int_equal(r.frames.size(), frames_before);
    assert_int_equal(r.error.status, HVD_ERR_TRANSPORT);
    assert_contains(r.error.message, kAuthFailed);
    assert_contains(r.error.message, "frame " + frame_no + " ");
}

void test_incremental_hmac_matches_one_shot(void **) {
    const std::string message = "seq" + std::string(300, 'm') + "tail";
    for (const std::string &key : {std::string(20, 'k'), std::string(100, 'K')}) {
        HmacSha256 mac(key);
        mac.update(message.substr(0, 3));
        mac.update(message.substr(3, 200));
        mac.update(message.substr(203));
        assert_true(digest_equal(mac.finish(), hmac_sha256(key, message)));
    }
}

// A sealed frame is the plain frame with the MAC appended (its length counting it), and the
// frames of a conversation verify at the other end, both ways, in order.
void test_sealed_frames_verify_both_ways(void **) {
    FrameMac client = client_end();
    FrameMac server = server_end();
    const std::string value("bin\0ary", 7);
    std::string put = client.seal(KvMsg::kPut, {"k", value});
    std::string plain = encode_frame(KvMsg::kPut, {"k", value});
    assert_int_equal(put.size(), plain.size() + kFrameMacBytes);
    assert_true(put.compare(4, plain.size() - 4, plain, 4) == 0);
    assert_int_equal(decode_u32(put.substr(0, 4)), put.size() - 4);

    // Sealed one by one: the order in which the operands of + are evaluated is unspecified.
    std::string get = client.seal(KvMsg::kGet, {encode_u64(7), "k"});
    std::string bye = client.seal(KvMsg::kBye, {});
    Received at_server = receive(server, put + get + bye);
    assert_int_equal(at_server.error.status, HVD_OK);
    assert_int_equal(at_server.frames.size(), 3);
    assert_true(at_server.frames[0].type == KvMsg::kPut);
    assert_true(at_server.frames[0].fields[1] == value);
    assert_true(at_server.frames[1].type == KvMsg::kGet);
    assert_int_equal(decode_u64(at_server.frames[1].fields[0]), 7);
    assert_true(at_server.frames[2].type == KvMsg::kBye);
    assert_int_equal(at_server.frames[2].fields.size(), 0);
    assert_int_equal(client.frames_sent(), 3);
    assert_int_equal(server.frames_received(), 3);

    std::string value_frame = server.seal(KvMsg::kValue, {encode_u64(7), value});
    std::string failed_frame = server.seal(KvMsg::kFailed, {encode_u32(3)});
    Received at_client = receive(client, value_frame + failed_frame);
    assert_int_equal(at_client.error.status, HVD_OK);
    assert_int_equal(at_client.frames.size(), 2);
    assert_true(at_client.frames[0].fields[1] == value);
    assert_int_equal(decode_u32(at_client.frames[1].fields[0]), 3);
}

// One bit flipped anywhere in a frame's body (type, field lengths, key, value, MAC) is refused
// before anything of it is parsed; a flipped length prefix never yields a frame either.
void test_every_flipped_bit_is_refused(void **) {
    std::string put = client_end().seal(KvMsg::kPut, {"ucx/addr/1", "worker-address-bytes"});
    for (size_t i = 0; i < put.size(); ++i) {
        for (int bit : {0, 3, 7}) {
            std::string bad = put;
            bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
            FrameMac server = server_end();
            Received r = receive(server, bad);
            if (i >= 4) {
                assert_refused(r, 0, "0");
            } else {
                assert_int_equal(r.frames.size(), 0);  // waits for bytes, or refused
                if (r.error.status != HVD_OK) assert_int_equal(r.error.status, HVD_ERR_TRANSPORT);
            }
        }
    }
    // A body too short to hold a MAC.
    FrameMac server = server_end();
    assert_refused(receive(server, encode_frame(KvMsg::kBye, {})), 0, "0");
}

// Each frame verifies only at its place in its own connection's stream, in its direction.
void test_replay_reorder_drop_splice_reflect_refused(void **) {
    FrameMac client = client_end();
    std::string first = client.seal(KvMsg::kPut, {"k", "old"});
    std::string second = client.seal(KvMsg::kPut, {"k", "new"});
    std::string third = client.seal(KvMsg::kBye, {});
    {
        FrameMac server = server_end();
        assert_refused(receive(server, first + second + first), 2, "2");  // replayed
        FrameMac again = server_end();
        assert_refused(receive(again, first + first), 1, "1");
    }
    {
        FrameMac server = server_end();
        assert_refused(receive(server, second + first), 0, "0");  // reordered
    }
    {
        FrameMac server = server_end();
        assert_refused(receive(server, first + third), 1, "1");  // the one between was dropped
    }
    {
        FrameMac other = client_end(std::string(kNonceBytes, 'o'));  // another connection
        FrameMac server = server_end();
        assert_refused(receive(server, other.seal(KvMsg::kPut, {"k", "old"})), 0, "0");
    }
    {
        FrameMac wrong = client_end(kClientNonce, "another-job-secret");
        FrameMac server = server_end();
        assert_refused(receive(server, wrong.seal(KvMsg::kPut, {"k", "old"})), 0, "0");
    }
    {
        FrameMac server = server_end();  // its own frame sent back to it
        assert_refused(receive(server, server.seal(KvMsg::kValue, {encode_u64(1), "v"})), 0, "0");
    }
}

// A job of three ranks: rank 0 (a KvClient) and rank 2 (a RawRank, to read the table)
// connected directly, rank 1 (a KvClient) through a man in the middle.
struct Job {
    explicit Job(MitmProxy::Edit to_server, MitmProxy::Edit to_client = MitmProxy::pass)
        : server(kLoopback, 0, kSecret, 3, kTimeoutMs),
          proxy(server.port(), std::move(to_server), std::move(to_client)) {
        rank0 = connect_rank(server.port(), 0, 3);
        rank2 = std::make_unique<RawRank>(server.port(), 2, 3);
        assert_true(rank2->hello().type == KvMsg::kWelcome);
        rank1 = connect_rank(proxy.port(), 1, 3);
    }

    KvServer server;
    MitmProxy proxy;
    std::unique_ptr<KvClient> rank0, rank1;
    std::unique_ptr<RawRank> rank2;
};

// The frame with one bit of its value's last byte flipped (the MAC follows the value).
std::string flip_value_bit(const std::string &frame) {
    std::string bad = frame;
    bad[bad.size() - kFrameMacBytes - 1] ^= 1;
    return bad;
}

// The server dropped rank 1 for a frame that failed authentication: it says so naming the
// rank, tells rank 0 that rank 1 failed, and goes on serving rank 0 and rank 2.
void assert_rank1_dropped(Job &job, StderrCapture &log) {
    std::vector<int32_t> failed = wait_failures(*job.rank0, kTimeoutMs);
    std::string text = log.text();
    int lines = log.count({"rendezvous server: dropped the client at", "(rank 1)", kAuthFailed});
    log.restore();
    if (lines != 1) fail_msg("expected one line naming rank 1 in:\n%s", text.c_str());
    assert_int_equal(failed.size(), 1);
    assert_int_equal(failed[0], 1);
    job.rank0->put("after", "still-served");
    assert_string_equal(job.rank2->value_or("after", "absent").c_str(), "still-served");
    assert_true(job.rank0->poll_failures().empty());
    assert_true(job.server.stats().connections == 2);
}

// The frames of a job through an untouched man in the middle verify, both ways, large values
// included, and the job ends cleanly.
void test_mitm_untouched_job_verifies(void **) {
    StderrCapture log;
    Job job(MitmProxy::pass);
    job.rank1->put("a", "from-1");
    assert_string_equal(job.rank0->get("a", Deadline::after_ms(kTimeoutMs)).c_str(), "from-1");
    std::string big(300000, 'x');
    big[12345] = '\0';
    job.rank0->put("b", big);
    assert_true(job.rank1->get("b", Deadline::after_ms(kTimeoutMs)) == big);
    assert_string_equal(job.rank2->value_or("a", "absent").c_str(), "from-1");
    job.rank1->bye();
    job.rank0->bye();
    assert_true(job.rank0->poll_failures().empty());
    int failures = log.count(kAuthFailed);
    log.restore();
    assert_int_equal(failures, 0);
}

// Rank 1's second PUT has a bit of its value flipped on the way.
void test_mitm_flipped_bit_closes_the_connection(void **) {
    StderrCapture log;
    Job job(
        [](size_t i, const std::string &frame) { return i == 2 ? flip_value_bit(frame) : frame; });
    job.rank1->put("k1", "v1");
    job.rank1->put("k2", "value-2");
    assert_rank1_dropped(job, log);
    assert_string_equal(job.rank2->value_or("k1", "absent").c_str(), "v1");
    assert_string_equal(job.rank2->value_or("k2", "absent").c_str(), "absent");
}

// After rank 1's two PUTs of one key, its first is sent again to roll the value back.
void test_mitm_replayed_frame_closes_the_connection(void **) {
    StderrCapture log;
    std::string first;
    Job job([&first](size_t i, const std::string &frame) {
        if (i == 1) first = frame;
        return i == 2 ? frame + first : frame;
    });
    job.rank1->put("k", "old");
    job.rank1->put("k", "new");
    assert_rank1_dropped(job, log);
    assert_string_equal(job.rank2->value_or("k", "absent").c_str(), "new");
}

// Rank 1's two PUTs of one key arrive swapped: neither is taken.
void test_mitm_reordered_frames_close_the_connection(void **) {
    StderrCapture log;
    std::string held;
    Job job([&held](size_t i, const std::string &frame) {
        if (i == 1) {
            held = frame;
            return std::string();
        }
        return i == 2 ? frame + held : frame;
    });
    job.rank1->put("k", "old");
    job.rank1->put("k", "new");
    assert_rank1_dropped(job, log);
    assert_string_equal(job.rank2->value_or("k", "absent").c_str(), "absent");
}

// A PUT recorded on another connection (another job's server, same secret, same place in its
// stream) replaces rank 1's own.
void test_mitm_frame_from_another_connection_is_refused(void **) {
    std::string recorded;  // read once the recorder's thread has been joined
    {
        KvServer other(kLoopback, 0, kSecret, 1, kTimeoutMs);
        MitmProxy recorder(other.port(), [&recorded](size_t i, const std::string &frame) {
            if (i == 1) recorded = frame;
            return frame;
        });
        auto c = connect_rank(recorder.port(), 0, 1);
        c->put("k", "spliced");
        assert_string_equal(c->get("k", Deadline::after_ms(kTimeoutMs)).c_str(), "spliced");
        c->bye();
    }
    assert_true(!recorded.empty());
    StderrCapture log;
    Job job([&recorded](size_t i, const std::string &frame) { return i == 1 ? recorded : frame; });
    job.rank1->put("k", "mine");
    assert_rank1_dropped(job, log);
    assert_string_equal(job.rank2->value_or("k", "absent").c_str(), "absent");
}

// The server's answer to rank 1's GET is altered on the way: rank 1's get fails saying why
// and never returns the altered value; it closes its connection, which the others hear of.
void test_mitm_altered_answer_fails_the_client(void **) {
    StderrCapture log;
    // To the client: 0 CHALLENGE, 1 WELCOME, 2 the VALUE.
    Job job(MitmProxy::pass, [](size_t i, const std::string &frame) {
        return i == 2 ? flip_value_bit(frame) : frame;
    });
    job.rank0->put("k", "from-0");
    Outcome o = catching([&] { job.rank1->get("k", Deadline::after_ms(kTimeoutMs)); });
    std::vector<int32_t> failed = wait_failures(*job.rank0, kTimeoutMs);
    int lines = log.count({"lost the rendezvous server at", kAuthFailed});
    log.restore();
    assert_int_equal(o.status, HVD_ERR_PEER_FAILED);
    assert_contains(o.message, kAuthFailed);
    assert_contains(o.message, "rank 1");
    assert_int_equal(lines, 1);
    assert_int_equal(failed.size(), 1);
    assert_int_equal(failed[0], 1);
    assert_string_equal(job.rank2->value_or("k", "absent").c_str(), "from-0");
}

// Ends of different protocol versions fail at the handshake, each saying both versions.
void test_protocol_version_mismatch_is_refused(void **) {
    KvServer server(kLoopback, 0, kSecret, 1, kTimeoutMs);
    RawRank old_rank(server.port(), 0, 1);
    assert_int_equal(old_rank.server_version, kKvProtocolVersion);
    Frame answer = old_rank.hello(kKvProtocolVersion - 1);
    assert_true(answer.type == KvMsg::kReject);
    const std::string old_version = std::to_string(kKvProtocolVersion - 1);
    const std::string version = std::to_string(kKvProtocolVersion);
    assert_contains(answer.fields.at(0),
                    "protocol version " + old_version + ", the server speaks " + version);

    Fd old_server = listen_tcp(kLoopback, 0);
    int port = bound_port(old_server.get());
    Outcome o;
    std::thread client([&] { o = catching([&] { connect_rank(port, 0, 1); }); });
    Deadline deadline = Deadline::after_ms(kTimeoutMs);
    while (!wait_readable(old_server.get(), deadline, 100) && !deadline.expired()) {
    }
    Fd conn = accept_tcp(old_server.get());
    send_all(conn.get(),
             encode_frame(KvMsg::kChallenge, {encode_u32(kKvProtocolVersion - 1), kServerNonce}),
             deadline, "old server");
    client.join();
    assert_int_equal(o.status, HVD_ERR_TRANSPORT);
    assert_contains(o.message, "speaks protocol " + old_version + ", rank 0 speaks " + version);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incremental_hmac_matches_one_shot),
        cmocka_unit_test(test_sealed_frames_verify_both_ways),
        cmocka_unit_test(test_every_flipped_bit_is_refused),
        cmocka_unit_test(test_replay_reorder_drop_splice_reflect_refused),
        cmocka_unit_test(test_mitm_untouched_job_verifies),
        cmocka_unit_test(test_mitm_flipped_bit_closes_the_connection),
        cmocka_unit_test(test_mitm_replayed_frame_closes_the_connection),
        cmocka_unit_test(test_mitm_reordered_frames_close_the_connection),
        cmocka_unit_test(test_mitm_frame_from_another_connection_is_refused),
        cmocka_unit_test(test_mitm_altered_answer_fails_the_client),
        cmocka_unit_test(test_protocol_version_mismatch_is_refused),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
