// SPDX-License-Identifier: Apache-2.0
// hvdrun --check-build: what this installation of libhvd supports, as horovodrun
// --check-build prints it: the library found and its version, its HVD_FEATURE_* bits (UCX,
// CUDA, NCCL, hwloc), and the frameworks whose bindings import here.
#pragma once

#include <string>

namespace hvdrun {

// The report, for stdout. Loads libhvd.so.1 with dlopen: $HVD_LIBRARY if set, else next to
// hvdrun (<prefix>/bin/../<libdir>), else the dynamic linker's search. Runs `python3` to find
// the Python frameworks (each check bounded by a timeout). Returns false when no library
// could be loaded (the report then says where it looked).
bool check_build_report(const std::string &hvdrun_path, std::string *report);

}  // namespace hvdrun
