// SPDX-License-Identifier: Apache-2.0
// horovodrun's --config-file: a YAML file of sections (params, autotune, timeline,
// stall_check, logging, library_options) holding `key: value` pairs, read into the HVD_*
// settings of tuning.h. Only that shape of YAML is read: mappings two levels deep with scalar
// values, comments and quoted strings; anything else is an error naming the line.
#pragma once

#include <string>
#include <vector>

#include "rank_env.h"

namespace hvdrun {

// Parses the text of a config file (`name` is used in messages). Appends the settings to
// *settings and warnings (keys libhvd has no use for) to *warnings. Returns false with *err
// ("FILE:LINE: what") on a syntax error, an unknown key or a malformed value.
bool parse_config_text(const std::string &text, const std::string &name,
                       std::vector<EnvVar> *settings, std::vector<std::string> *warnings,
                       std::string *err);

// Reads `path` and parses it as parse_config_text does; false with *err when it cannot be read.
bool read_config_file(const std::string &path, std::vector<EnvVar> *settings,
                      std::vector<std::string> *warnings, std::string *err);

}  // namespace hvdrun
