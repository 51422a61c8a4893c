// SPDX-License-Identifier: Apache-2.0
// Reading the settings of config/settings.h from the environment: HVD_<name>, else Horovod's
// HOROVOD_<name> where the table accepts it; an empty variable counts as unset. A read names a
// table row, whose type, default and range it applies.
//
// Every function reads the environment afresh (no caching); callers that must see one value
// for the process's lifetime keep the first. Thread-safe as long as no thread changes the
// environment meanwhile. None throws or blocks.
#pragma once

#include <cstdint>

#include "config/settings.h"

namespace hvd::config {

// The raw text of s, or nullptr when neither variable is set. Any type.
const char *env_value(Setting s);

// s of Type::kInt: its value; unset gives the default (`dflt` where the default depends on
// the caller's circumstances, e.g. an oversubscribed host), a malformed value prints
// "[hvd] warning: ignoring HVD_<name>=<value> (not an integer)" to stderr and gives the
// default, and a value outside [min, max] what the row's OutOfRange says.
int64_t get_int(Setting s);
int64_t get_int(Setting s, int64_t dflt);

// s of Type::kDouble: as get_int ("not a number"); NaN gives the default.
double get_double(Setting s);

// A boolean setting's text: 1/true/yes/on or 0/false/no/off (any case) into *value; false
// (and *value untouched) for anything else.
bool parse_bool(const char *text, bool *value);

// s of Type::kBool, as parse_bool reads it; anything else warns ("not a boolean") and gives
// the default.
bool get_bool(Setting s);
bool get_bool(Setting s, bool dflt);

// s of Type::kString or Type::kEnum: the text, or the row's default_string (may be nullptr)
// when unset. Enum values are not checked here: the reader decides what an unknown one means.
const char *get_string(Setting s);

}  // namespace hvd::config
