// SPDX-License-Identifier: Apache-2.0
#include "output_relay.h"

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace hvdrun {

bool write_all(int fd, const char *data, size_t n) {
    while (n > 0) {
        ssize_t written = write(fd, data, n);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        data += written;
        n -= static_cast<size_t>(written);
    }
    return true;
}

std::string rank_prefix(int rank, const char *stream_name) {
    return "[" + std::to_string(rank) + "]<" + stream_name + ">: ";
}

LineRelay::LineRelay(std::string prefix, int out_fd)
    : prefix_(std::move(prefix)), out_fd_(out_fd) {}

void LineRelay::feed(const char *data, size_t n) {
    pending_.append(data, n);
    size_t start = 0;
    for (size_t nl = pending_.find('\n'); nl != std::string::npos;
         nl = pending_.find('\n', start)) {
        emit(pending_.data() + start, nl + 1 - start, false);
        start = nl + 1;
    }
    pending_.erase(0, start);
    while (pending_.size() >= kMaxLine) {
        emit(pending_.data(), kMaxLine, !prefix_.empty());
        pending_.erase(0, kMaxLine);
    }
}

void LineRelay::finish() {
    if (pending_.empty()) return;
    emit(pending_.data(), pending_.size(), !prefix_.empty());
    pending_.clear();
}

void LineRelay::emit(const char *text, size_t n, bool add_newline) {
    scratch_.assign(prefix_);
    scratch_.append(text, n);
    if (add_newline) scratch_ += '\n';
    // A failed write (reader gone) drops this line; the ranks keep running regardless.
    (void)write_all(out_fd_, scratch_.data(), scratch_.size());
}

}  // namespace hvdrun
