// SPDX-License-Identifier: Apache-2.0
// The timeline writer. Events are formatted into one in-memory buffer under a mutex and written
// out in large chunks (every 64 KiB or 1 s), never one syscall per event. Array elements are
// separated by a comma written *before* each event, so stop() closes the array with "]" alone
// and a file cut short by a crash is still a valid prefix that chrome://tracing accepts.
#include "diagnostics/timeline.h"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/log.h"

namespace hvd::diagnostics {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kFlushBytes = 64 * 1024;
constexpr auto kFlushInterval = std::chrono::seconds(1);
constexpr int32_t kProcessRow = 0;  // process metadata and cycle markers; tensors start at 1

void append_int(std::string &out, int64_t v) {
    char digits[24];
    const auto res = std::to_chars(digits, digits + sizeof(digits), v);
    out.append(digits, res.ptr);
}

// Microseconds with nanosecond precision ("12.345"): Chrome's unit, without float rounding.
void append_micros(std::string &out, Clock::duration since_start) {
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(since_start).count();
    append_int(out, ns / 1000);
    const int64_t frac = ns % 1000;
    out += '.';
    out += static_cast<char>('0' + frac / 100);
    out += static_cast<char>('0' + frac / 10 % 10);
    out += static_cast<char>('0' + frac % 10);
}

// Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates, at
// most U+10FFFF), or 0 if the bytes there are not one.
size_t utf8_sequence_length(const unsigned char *p, size_t left) {
    const unsigned char c = p[0];
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (left < n || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; ++i)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

// Appends s as the contents of a JSON string. Tensor names are arbitrary user bytes: quotes,
// backslashes and control characters are escaped, and bytes that are not UTF-8 become U+FFFD,
// because strict parsers (Python's json, Perfetto) reject the whole file otherwise.
void append_escaped(std::string &out, std::string_view s) {
    const auto *p = reinterpret_cast<const unsigned char *>(s.data());
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof(esc), "\\u%04x", c);
            out += esc;
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else if (const size_t n = utf8_sequence_length(p + i, s.size() - i); n > 0) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out += "\\ufffd";
            ++i;
        }
    }
}

// A tensor's row: its trace thread id and the stack of spans open on it. Popped strings are
// kept (depth marks the top) so that reopening a span reuses their storage.
struct Row {
    int32_t tid = 0;
    std::vector<std::string> open;
    size_t depth = 0;
};

}  // namespace

struct Timeline::Impl {
    // Written only under mu; read without it by the no-op fast path.
    std::atomic<bool> active{false};
    std::atomic<bool> cycles{false};

    std::mutex mu;  // guards everything below
    std::FILE *file = nullptr;
    std::string path;
    int32_t rank = 0;
    bool need_comma = false;
    bool write_failed = false;
    Clock::time_point t0;
    Clock::time_point last_flush;
    std::string buf;
    std::unordered_map<std::string, Row> rows;
    int32_t next_tid = kProcessRow + 1;

    void open(const std::string &file_path, int32_t trace_rank);
    void finish();
    void begin_span(const std::string &tensor, const std::string &activity);
    void end_span(const std::string &tensor);
    void cycle_marker();

  private:
    Row &row_for(const std::string &tensor);
    void close_open_spans(Clock::time_point now);
    void event_prefix(std::string_view name, const char *ph, int32_t tid);
    void timed_event(std::string_view name, const char *ph, int32_t tid, Clock::time_point now);
    void name_metadata(const char *kind, int32_t tid, std::string_view value);
    void sort_metadata(const char *kind, int32_t tid, int64_t index);
    void maybe_flush(Clock::time_point now);
    void flush(Clock::time_point now);
};

void Timeline::Impl::open(const std::string &file_path, int32_t trace_rank) {
    std::FILE *f = std::fopen(file_path.c_str(), "w");
    if (f == nullptr)
        throw Error(HVD_ERR_INVALID_ARG, strprintf("rank %d: cannot open timeline file '%s': %s",
                                                   trace_rank, file_path.c_str(), strerror(errno)));
    std::setvbuf(f, nullptr, _IONBF, 0);  // buf is the buffer; stdio's would copy twice
    file = f;
    path = file_path;
    rank = trace_rank;
    need_comma = false;
    write_failed = false;
    rows.clear();
    next_tid = kProcessRow + 1;
    buf.clear();
    buf.reserve(kFlushBytes + 4096);
    t0 = Clock::now();
    // Wall-clock time of ts 0, as Horovod's timeline gives it in the process's metadata, so
    // that tools can line the trace up with other logs.
    const auto epoch_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
    buf += "[\n";
    event_prefix("process_name", "M", kProcessRow);
    buf += ",\"args\":{\"name\":\"";
    append_escaped(buf, strprintf("rank %d", rank));
    buf += "\",\"start_time_since_epoch_in_micros\":";
    append_int(buf, epoch_micros);
    buf += "}}";
    sort_metadata("process_sort_index", kProcessRow, rank);
    flush(t0);  // a started timeline is visible on disk at once
}

// Spans still open (an op in flight at stop or finalize) end here, so that every B has its E
// and viewers draw them up to the stop time.
void Timeline::Impl::finish() {
    const auto now = Clock::now();
    close_open_spans(now);
    buf += "\n]\n";
    flush(now);
    if (std::fclose(file) != 0 && !write_failed)
        HVD_LOG(kWarning, rank, "timeline: closing '%s' failed: %s", path.c_str(), strerror(errno));
    file = nullptr;
    rows.clear();
    buf.clear();
    buf.shrink_to_fit();
}

void Timeline::Impl::begin_span(const std::string &tensor, const std::string &activity) {
    const auto now = Clock::now();  // taken under mu: timestamps never go back in the file
    Row &row = row_for(tensor);
    if (row.depth == row.open.size()) row.open.emplace_back();
    row.open[row.depth++].assign(activity);
    timed_event(activity, "B", row.tid, now);
    maybe_flush(now);
}

// An end without an open span is dropped, so a row can never go out of balance.
void Timeline::Impl::end_span(const std::string &tensor) {
    const auto it = rows.find(tensor);
    if (it == rows.end() || it->second.depth == 0) return;
    const auto now = Clock::now();
    Row &row = it->second;
    timed_event(row.open[--row.depth], "E", row.tid, now);
    maybe_flush(now);
}

// Horovod's cycle marker: a global instant, which viewers draw as a line across every row.
void Timeline::Impl::cycle_marker() {
    const auto now = Clock::now();
    event_prefix("CYCLE_START", "i", kProcessRow);
    buf += ",\"s\":\"g\",\"ts\":";
    append_micros(buf, now - t0);
    buf += '}';
    maybe_flush(now);
}

// Rows are numbered in order of first use, and thread_sort_index keeps viewers from
// reordering them by name.
Row &Timeline::Impl::row_for(const std::string &tensor) {
    const auto it = rows.find(tensor);
    if (it != rows.end()) return it->second;
    const int32_t tid = next_tid++;
    name_metadata("thread_name", tid, tensor);
    sort_metadata("thread_sort_index", tid, tid);
    Row &row = rows[tensor];
    row.tid = tid;
    return row;
}

void Timeline::Impl::close_open_spans(Clock::time_point now) {
    for (auto &entry : rows) {
        Row &row = entry.second;
        while (row.depth > 0)
            timed_event(row.open[--row.depth], "E", row.tid, now);
    }
}

void Timeline::Impl::event_prefix(std::string_view name, const char *ph, int32_t tid) {
    buf += need_comma ? ",\n{\"name\":\"" : "{\"name\":\"";
    need_comma = true;
    append_escaped(buf, name);
    buf += "\",\"ph\":\"";
    buf += ph;
    buf += "\",\"pid\":";
    append_int(buf, rank);
    buf += ",\"tid\":";
    append_int(buf, tid);
}

void Timeline::Impl::timed_event(std::string_view name, const char *ph, int32_t tid,
                                 Clock::time_point now) {
    event_prefix(name, ph, tid);
    buf += ",\"ts\":";
    append_micros(buf, now - t0);
    buf += '}';
}

void Timeline::Impl::name_metadata(const char *kind, int32_t tid, std::string_view value) {
    event_prefix(kind, "M", tid);
    buf += ",\"args\":{\"name\":\"";
    append_escaped(buf, value);
    buf += "\"}}";
}

void Timeline::Impl::sort_metadata(const char *kind, int32_t tid, int64_t index) {
    event_prefix(kind, "M", tid);
    buf += ",\"args\":{\"sort_index\":";
    append_int(buf, index);
    buf += "}}";
}

void Timeline::Impl::maybe_flush(Clock::time_point now) {
    if (buf.size() >= kFlushBytes || now - last_flush >= kFlushInterval) flush(now);
}

// After a failed write (disk full, say) the rest of the trace is dropped with one warning:
// the timeline is a diagnostic and must not fail or slow down the training job.
void Timeline::Impl::flush(Clock::time_point now) {
    if (!write_failed && !buf.empty() &&
        std::fwrite(buf.data(), 1, buf.size(), file) != buf.size()) {
        write_failed = true;
        HVD_LOG(kWarning, rank, "timeline: writing '%s' failed (%s); dropping further events",
                path.c_str(), strerror(errno));
    }
    buf.clear();
    last_flush = now;
}

Timeline::Timeline() : impl_(std::make_unique<Impl>()) {}

Timeline::~Timeline() {
    stop();
}

void Timeline::start(const std::string &path, bool mark_cycles, int32_t rank) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->active.load(std::memory_order_relaxed))
        throw Error(HVD_ERR_BUSY, strprintf("rank %d: timeline already recording to '%s'", rank,
                                            impl_->path.c_str()));
    impl_->open(path, rank);
    impl_->cycles.store(mark_cycles, std::memory_order_relaxed);
    impl_->active.store(true, std::memory_order_release);
}

void Timeline::stop() {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->active.load(std::memory_order_relaxed)) return;
    impl_->active.store(false, std::memory_order_relaxed);
    impl_->cycles.store(false, std::memory_order_relaxed);
    impl_->finish();
}

bool Timeline::active() const {
    return impl_->active.load(std::memory_order_acquire);
}

// The fast paths below read one flag without the lock; it is read again under the lock
// because stop() may have run in between.
void Timeline::begin(const std::string &tensor, const std::string &activity) {
    if (!impl_->active.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->active.load(std::memory_order_relaxed)) impl_->begin_span(tensor, activity);
}

void Timeline::end(const std::string &tensor) {
    if (!impl_->active.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->active.load(std::memory_order_relaxed)) impl_->end_span(tensor);
}

void Timeline::mark_cycle() {
    if (!impl_->cycles.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->cycles.load(std::memory_order_relaxed)) impl_->cycle_marker();
}

}  // namespace hvd::diagnostics
