// SPDX-License-Identifier: Apache-2.0
// hvd._hvd_pybind.torch_fast: hvd.torch's allreduce of the common case in one call (see
// torch_fast_path.cc).
#pragma once

#include "py_convert.h"

namespace hvd_py {

// Adds the submodule `torch_fast` to m.
void add_torch_fast_path(py::module_ &m);

}  // namespace hvd_py
