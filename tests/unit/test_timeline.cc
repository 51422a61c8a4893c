// SPDX-License-Identifier: Apache-2.0
// The timeline writer: every file it leaves behind is parsed back by a strict JSON parser
// (strict_json.h, independent of the writer's code) and checked event by event: balanced spans
// per row in the order they were opened, one named row per tensor, names that round-trip
// through escaping, and the error and no-op contracts of start/stop.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
// cmocka 1.1.5's header has no extern "C" guard of its own.
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <unistd.h>

#include "common/error.h"
#include "diagnostics/timeline.h"
#include "strict_json.h"

namespace {

using hvd::diagnostics::Timeline;
using namespace strict_json;

// ---------------------------------------------------------------- helpers

// Per-run scratch directory, removed by the group teardown. (No <filesystem> or iostreams:
// they pull in <ios>, which cmocka's fail() macro, force-included first, breaks.)
std::string g_dir;

std::string temp_file(const char *name) {
    return g_dir + "/" + name;
}

std::string read_file(const std::string &path) {
    std::string text;
    std::FILE *f = std::fopen(path.c_str(), "rb");
    assert_non_null(f);
    char chunk[65536];
    size_t n = 0;
    while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
        text.append(chunk, n);
    std::fclose(f);
    return text;
}

// Parses the whole file; fails the test if it is not one valid JSON array.
Json parse_trace(const std::string &path) {
    const std::string text = read_file(path);
    assert_true(text.rfind("[\n", 0) == 0);  // the documented start of the file
    Json doc;
    JsonParser parser(text);
    assert_true(parser.parse(doc));
    assert_int_equal(doc.kind, Json::kArray);
    return doc;
}

std::string str_field(const Json &event, const char *key) {
    const Json *v = event.get(key);
    assert_non_null(v);
    assert_int_equal(v->kind, Json::kString);
    return v->str;
}

double num_field(const Json &event, const char *key) {
    const Json *v = event.get(key);
    assert_non_null(v);
    assert_int_equal(v->kind, Json::kNumber);
    return v->number;
}

int64_t epoch_micros_now() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What a trace holds, regrouped: row names, and the B/E sequence on each row.
struct TraceSummary {
    std::map<std::string, int64_t> row_of;              // tensor name -> tid
    std::map<int64_t, int64_t> sort_index;              // tid -> thread_sort_index
    std::map<int64_t, std::vector<std::string>> spans;  // tid -> "B:name" / "E:name" in order
    std::string process_name;
    double start_time_since_epoch_us = 0;
    int64_t cycles = 0;
};

void add_metadata(const Json &e, int64_t tid, TraceSummary &sum) {
    const std::string name = str_field(e, "name");
    const Json *args = e.get("args");
    assert_non_null(args);
    if (name == "process_name") {
        sum.process_name = str_field(*args, "name");
        sum.start_time_since_epoch_us = num_field(*args, "start_time_since_epoch_in_micros");
    }
    if (name == "thread_name") {
        assert_true(sum.row_of.emplace(str_field(*args, "name"), tid).second);  // one row each
        assert_true(sum.spans.count(tid) == 0);  // announced before its first span
    }
    if (name == "thread_sort_index")
        sum.sort_index[tid] = static_cast<int64_t>(num_field(*args, "sort_index"));
}

// Checks every event's common fields and that timestamps never go back, then regroups.
TraceSummary summarize(const Json &doc, int32_t rank) {
    TraceSummary sum;
    double last_ts = 0;
    for (const Json &e : doc.items) {
        assert_int_equal(e.kind, Json::kObject);
        assert_int_equal(static_cast<int64_t>(num_field(e, "pid")), rank);
        const auto tid = static_cast<int64_t>(num_field(e, "tid"));
        const std::string ph = str_field(e, "ph");
        if (ph == "M") {
            add_metadata(e, tid, sum);
            continue;
        }
        const double ts = num_field(e, "ts");
        assert_true(ts >= last_ts);
        last_ts = ts;
        if (ph == "i") {
            assert_string_equal(str_field(e, "name").c_str(), "CYCLE_START");
            assert_string_equal(str_field(e, "s").c_str(), "g");
            assert_int_equal(tid, 0);
            ++sum.cycles;
            continue;
        }
        assert_true(ph == "B" || ph == "E");
        sum.spans[tid].push_back(ph + ":" + str_field(e, "name"));
    }
    return sum;
}

// Every E closes the innermost open B of the same name on its row; nothing stays open.
void assert_balanced(const std::vector<std::string> &row) {
    std::vector<std::string> open;
    for (const std::string &ev : row) {
        const std::string name = ev.substr(2);
        if (ev[0] == 'B') {
            open.push_back(name);
        } else {
            assert_false(open.empty());
            assert_string_equal(open.back().c_str(), name.c_str());
            open.pop_back();
        }
    }
    assert_true(open.empty());
}

template <typename F>
hvd_status_t status_of(F &&f, std::string *detail = nullptr) {
    try {
        f();
    } catch (const hvd::Error &e) {
        if (detail != nullptr) *detail = e.what();
        return e.status();
    }
    return HVD_OK;
}

// One op as the engine records it: negotiation with a queue sub-span, then the op with a
// memcpy sub-span.
void record_op(Timeline &tl, const std::string &tensor) {
    tl.begin(tensor, "NEGOTIATE_ALLREDUCE");
    tl.begin(tensor, "QUEUE");
    tl.end(tensor);
    tl.end(tensor);
    tl.begin(tensor, "ALLREDUCE");
    tl.begin(tensor, "MEMCPY_IN_FUSION_BUFFER");
    tl.end(tensor);
    tl.end(tensor);
}

const std::vector<std::string> kOpPattern = {
    "B:NEGOTIATE_ALLREDUCE",     "B:QUEUE",     "E:QUEUE",
    "E:NEGOTIATE_ALLREDUCE",     "B:ALLREDUCE", "B:MEMCPY_IN_FUSION_BUFFER",
    "E:MEMCPY_IN_FUSION_BUFFER", "E:ALLREDUCE"};

// ---------------------------------------------------------------- tests

// 4 threads, 3 tensors each, 400 ops per tensor: ~38k events, several 64 KiB flushes.
void test_concurrent_spans(void **) {
    constexpr int kThreads = 4, kTensorsPerThread = 3, kOps = 400;
    constexpr int32_t kRank = 3;
    const std::string path = temp_file("concurrent.json");
    auto tensor_name = [](int t, int k) {
        return "grad/layer" + std::to_string(t) + "." + std::to_string(k) + (k == 2 ? "\"q\\" : "");
    };
    const int64_t started_us = epoch_micros_now();
    Timeline tl;
    tl.start(path, false, kRank);
    assert_true(tl.active());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kOps; ++i)
                for (int k = 0; k < kTensorsPerThread; ++k)
                    record_op(tl, tensor_name(t, k));
        });
    for (auto &th : threads)
        th.join();
    tl.stop();
    assert_false(tl.active());

    const TraceSummary sum = summarize(parse_trace(path), kRank);
    assert_string_equal(sum.process_name.c_str(), "rank 3");
    // Horovod's wall-clock origin: between the test's start and now.
    assert_true(sum.start_time_since_epoch_us >= static_cast<double>(started_us));
    assert_true(sum.start_time_since_epoch_us <= static_cast<double>(epoch_micros_now()));
    assert_int_equal(sum.cycles, 0);
    assert_int_equal(sum.row_of.size(), kThreads * kTensorsPerThread);
    assert_int_equal(sum.spans.size(), kThreads * kTensorsPerThread);
    for (int t = 0; t < kThreads; ++t)
        for (int k = 0; k < kTensorsPerThread; ++k) {
            const auto row = sum.row_of.find(tensor_name(t, k));
            assert_true(row != sum.row_of.end());
            assert_true(row->second >= 1);  // tid 0 is the process row
            assert_int_equal(sum.sort_index.at(row->second), row->second);
            const std::vector<std::string> &seq = sum.spans.at(row->second);
            assert_int_equal(seq.size(), kOps * kOpPattern.size());
            for (size_t j = 0; j < seq.size(); ++j)
                assert_string_equal(seq[j].c_str(), kOpPattern[j % kOpPattern.size()].c_str());
            assert_balanced(seq);
        }
}

// Rows are numbered in order of first use.
void test_rows_in_first_use_order(void **) {
    const std::string path = temp_file("order.json");
    Timeline tl;
    tl.start(path, false, 0);
    for (const char *name : {"zeta", "alpha", "mid", "alpha"})
        record_op(tl, name);
    tl.stop();
    const TraceSummary sum = summarize(parse_trace(path), 0);
    assert_int_equal(sum.row_of.at("zeta"), 1);
    assert_int_equal(sum.row_of.at("alpha"), 2);
    assert_int_equal(sum.row_of.at("mid"), 3);
    assert_int_equal(sum.spans.at(2).size(), 2 * kOpPattern.size());
}

// Names with JSON's special characters, control bytes, UTF-8 and a stray byte.
void test_escaping_round_trips(void **) {
    const std::string path = temp_file("escape.json");
    const std::vector<std::string> names = {"quo\"te",
                                            "back\\slash",
                                            "new\nline\ttab\r",
                                            std::string("ctl\x01\x1f", 5),
                                            "gr\xC3\xA4"
                                            "d/\xE2\x82\xAC/\xF0\x9F\x98\x80",
                                            "slash/es",
                                            "</script>"};
    const std::string stray =
        "bad\xFF"
        "byte\xC3";  // not UTF-8: becomes U+FFFD each
    const std::string stray_read =
        "bad\xEF\xBF\xBD"
        "byte\xEF\xBF\xBD";
    Timeline tl;
    tl.start(path, false, 1);
    for (const std::string &n : names)
        tl.begin(n, "SPAN \"" + n + "\"");
    tl.begin(stray, "ALLGATHER");
    for (const std::string &n : names)
        tl.end(n);
    tl.end(stray);
    tl.stop();

    const std::string text = read_file(path);
    assert_non_null(std::strstr(text.c_str(), "quo\\\"te"));
    assert_non_null(std::strstr(text.c_str(), "back\\\\slash"));
    assert_non_null(std::strstr(text.c_str(), "new\\u000aline\\u0009tab\\u000d"));
    assert_non_null(std::strstr(text.c_str(), "ctl\\u0001\\u001f"));

    const TraceSummary sum = summarize(parse_trace(path), 1);
    assert_int_equal(sum.row_of.size(), names.size() + 1);
    for (const std::string &n : names) {
        const auto row = sum.row_of.find(n);
        assert_true(row != sum.row_of.end());
        const std::vector<std::string> expect = {"B:SPAN \"" + n + "\"", "E:SPAN \"" + n + "\""};
        assert_true(sum.spans.at(row->second) == expect);
    }
    assert_true(sum.row_of.count(stray_read) == 1);
}

// A second, independent strict parser, where the machine has one.
void test_python_accepts_file(void **) {
    if (std::system("command -v python3 >/dev/null 2>&1") != 0) {
        print_message("python3 not found: skipping the cross-check\n");
        skip();
    }
    const std::string path = temp_file("python.json");
    Timeline tl;
    tl.start(path, true, 0);
    tl.begin("we\"ird\\\n\xFF", "ALLREDUCE");
    tl.mark_cycle();
    tl.end("we\"ird\\\n\xFF");
    tl.stop();
    const std::string cmd =
        "python3 -c 'import json,sys; d=json.load(open(sys.argv[1],encoding=\"utf-8\")); "
        "assert isinstance(d,list) and len(d)==7' '" +
        path + "'";
    assert_int_equal(std::system(cmd.c_str()), 0);
}

void test_start_twice_is_busy(void **) {
    const std::string path = temp_file("busy.json");
    Timeline tl;
    tl.start(path, false, 0);
    std::string detail;
    assert_int_equal(status_of([&] { tl.start(temp_file("other.json"), false, 0); }, &detail),
                     HVD_ERR_BUSY);
    assert_non_null(std::strstr(detail.c_str(), path.c_str()));  // names the file in use
    assert_true(tl.active());
    record_op(tl, "t");
    tl.stop();
    assert_int_equal(summarize(parse_trace(path), 0).spans.at(1).size(), kOpPattern.size());
    assert_int_equal(access(temp_file("other.json").c_str(), F_OK), -1);
}

void test_bad_path_is_invalid_arg(void **) {
    Timeline tl;
    for (const std::string &bad : {temp_file("missing/dir/t.json"), g_dir}) {
        std::string detail;
        assert_int_equal(status_of([&] { tl.start(bad, false, 5); }, &detail), HVD_ERR_INVALID_ARG);
        assert_non_null(std::strstr(detail.c_str(), bad.c_str()));
        assert_non_null(std::strstr(detail.c_str(), "rank 5"));
        assert_false(tl.active());
    }
    const std::string good = temp_file("after_bad.json");  // a failed start leaves it usable
    tl.start(good, false, 5);
    tl.stop();
    assert_int_equal(parse_trace(good).items.size(), 2);  // process name and sort index
}

void test_inactive_calls_do_nothing(void **) {
    Timeline never;
    never.begin("t", "X");
    never.end("t");
    never.mark_cycle();
    never.stop();
    assert_false(never.active());

    const std::string path = temp_file("inactive.json");
    Timeline tl;
    tl.start(path, true, 0);
    record_op(tl, "t");
    tl.stop();
    const std::string before = read_file(path);
    record_op(tl, "t");
    tl.begin("u", "X");
    tl.mark_cycle();
    tl.stop();
    assert_true(read_file(path) == before);
}

void test_restart_on_new_file(void **) {
    const std::string first = temp_file("first.json"), second = temp_file("second.json");
    Timeline tl;
    tl.start(first, false, 2);
    record_op(tl, "a");
    record_op(tl, "b");
    tl.stop();
    const std::string first_text = read_file(first);
    tl.start(second, false, 2);
    record_op(tl, "c");
    tl.stop();

    assert_true(read_file(first) == first_text);
    const TraceSummary one = summarize(parse_trace(first), 2);
    assert_int_equal(one.row_of.size(), 2);
    const TraceSummary two = summarize(parse_trace(second), 2);
    assert_int_equal(two.row_of.size(), 1);
    assert_int_equal(two.row_of.at("c"), 1);  // row numbering starts over
    assert_int_equal(two.spans.at(1).size(), kOpPattern.size());
}

void test_cycle_markers_only_when_asked(void **) {
    const std::string without = temp_file("no_cycles.json"), with = temp_file("cycles.json");
    Timeline tl;
    tl.start(without, false, 0);
    for (int i = 0; i < 5; ++i) {
        tl.mark_cycle();
        record_op(tl, "t");
    }
    tl.stop();
    assert_int_equal(summarize(parse_trace(without), 0).cycles, 0);

    tl.start(with, true, 0);
    for (int i = 0; i < 7; ++i) {
        tl.mark_cycle();
        record_op(tl, "t");
    }
    tl.stop();
    const TraceSummary sum = summarize(parse_trace(with), 0);
    assert_int_equal(sum.cycles, 7);
    assert_int_equal(sum.spans.at(1).size(), 7 * kOpPattern.size());
}

// Spans open at stop (or destruction) are closed, so the file stays balanced; an end with
// nothing open is dropped.
void test_destructor_closes_open_spans(void **) {
    const std::string path = temp_file("destructor.json");
    {
        Timeline tl;
        tl.start(path, false, 0);
        tl.end("never-begun");
        tl.begin("t", "ALLREDUCE");
        tl.begin("t", "MEMCPY_IN_FUSION_BUFFER");
        tl.begin("u", "BROADCAST");
        tl.end("u");
        tl.end("u");  // nothing open on the row any more
        tl.begin("u", "ALLGATHER");
    }
    const TraceSummary sum = summarize(parse_trace(path), 0);
    assert_int_equal(sum.row_of.size(), 2);  // no row for the unmatched end
    const std::vector<std::string> t_expect = {"B:ALLREDUCE", "B:MEMCPY_IN_FUSION_BUFFER",
                                               "E:MEMCPY_IN_FUSION_BUFFER", "E:ALLREDUCE"};
    assert_true(sum.spans.at(sum.row_of.at("t")) == t_expect);
    const std::vector<std::string> u_expect = {"B:BROADCAST", "E:BROADCAST", "B:ALLGATHER",
                                               "E:ALLGATHER"};
    assert_true(sum.spans.at(sum.row_of.at("u")) == u_expect);
}

// The parser itself must reject what the writer must never produce.
void test_parser_rejects_invalid_json(void **) {
    for (const char *bad : {"[1,]", "[\n{\"a\":1},\n", "[\"a\nb\"]", "[01]", "{\"a\" 1}",
                            "[\"\\x\"]", "[\"\xFF\"]", "[1] x", "[\"\\ud800\"]"}) {
        Json doc;
        JsonParser parser{std::string(bad)};
        assert_false(parser.parse(doc));
    }
    Json doc;
    const std::string good = "[{\"k\":[true,false,null,-1.5e3,\"\\u00e4\\ud83d\\ude00\"]}]";
    JsonParser parser(good);
    assert_true(parser.parse(doc));
    const Json &arr = *doc.items[0].get("k");
    assert_true(arr.items[3].number == -1500.0);
    assert_string_equal(arr.items[4].str.c_str(), "\xC3\xA4\xF0\x9F\x98\x80");
}

int make_dir(void **) {
    const char *tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/hvd_timeline_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return -1;
    g_dir = tmpl;
    return 0;
}

// The tests create plain files only, directly in g_dir.
int remove_dir(void **) {
    DIR *dir = opendir(g_dir.c_str());
    if (dir == nullptr) return -1;
    while (const dirent *entry = readdir(dir))
        if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
            unlink(temp_file(entry->d_name).c_str());
    closedir(dir);
    return rmdir(g_dir.c_str());
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser_rejects_invalid_json),
        cmocka_unit_test(test_concurrent_spans),
        cmocka_unit_test(test_rows_in_first_use_order),
        cmocka_unit_test(test_escaping_round_trips),
        cmocka_unit_test(test_python_accepts_file),
        cmocka_unit_test(test_start_twice_is_busy),
        cmocka_unit_test(test_bad_path_is_invalid_arg),
        cmocka_unit_test(test_inactive_calls_do_nothing),
        cmocka_unit_test(test_restart_on_new_file),
        cmocka_unit_test(test_cycle_markers_only_when_asked),
        cmocka_unit_test(test_destructor_closes_open_spans),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
