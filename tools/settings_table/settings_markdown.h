// SPDX-License-Identifier: Apache-2.0
// README.md's table of settings, generated from the one declaration (config/settings.h), and
// the block of README.md that holds it.
#pragma once

#include <string>

namespace hvd::settings_table {

// The Markdown block README.md holds between its markers, kBegin and kEnd lines included:
// one table per Section (tuning, then launch). Pure: the same text for the same table.
std::string markdown_block();

// The marker lines that delimit the block in README.md.
extern const char *const kBegin;
extern const char *const kEnd;

// Where the block lies in `text`: sets *begin to the offset of kBegin and *end to the offset
// just past kEnd's line. Returns false when a marker is missing, repeated or out of order.
bool find_block(const std::string &text, size_t *begin, size_t *end);

}  // namespace hvd::settings_table
