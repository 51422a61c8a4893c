// SPDX-License-Identifier: Apache-2.0
// Re-emits a rank's output stream line by line, each line behind the rank's prefix
// ("[3]<stdout>: "), written with a single write so that lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <string>

namespace hvdrun {

// Writes all of data to fd, retrying short writes and EINTR. Returns false on another error
// (for example EPIPE when hvdrun's reader went away); the output is then dropped.
bool write_all(int fd, const char *data, size_t n);

// Horovod's prefix for one rank's stream: "[<rank>]<stdout>: " / "[<rank>]<stderr>: ".
std::string rank_prefix(int rank, const char *stream_name);

class LineRelay {
  public:
    // An empty prefix passes output through unchanged (--no-prefix), still line by line.
    LineRelay(std::string prefix, int out_fd);

    // Buffers `data` and writes every completed line.
    void feed(const char *data, size_t n);

    // End of stream: writes the unfinished last line, if any. With a prefix, a newline is
    // added so that the next rank's line starts on a line of its own.
    void finish();

    // A line longer than this is written in pieces (each prefixed), bounding memory when a
    // rank writes without newlines.
    static constexpr size_t kMaxLine = 64 * 1024;

  private:
    void emit(const char *text, size_t n, bool add_newline);

    std::string prefix_;
    int out_fd_;
    std::string pending_;  // the start of a line whose newline has not arrived
    std::string scratch_;  // prefix + line, reused so each line is one write
};

}  // namespace hvdrun
