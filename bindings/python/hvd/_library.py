# SPDX-License-Identifier: Apache-2.0
"""Where libhvd.so.1 is: HVD_LIBRARY, else the path CMake recorded for this copy of the
package (build tree or install prefix), else the library's recorded place relative to the
installed package, else the dynamic loader's search path."""

import os

SONAME = "libhvd.so.1"


def library_path():
    """The path (or bare SONAME) to hand to the loader. Never raises."""
    explicit = os.environ.get("HVD_LIBRARY")
    if explicit:
        return explicit
    try:
        from hvd import _build_config
    except ImportError:
        return SONAME
    recorded = getattr(_build_config, "LIBRARY_PATH", "")
    if recorded and os.path.exists(recorded):
        return recorded
    relative = getattr(_build_config, "LIBRARY_RELATIVE", "")
    if relative:  # an installed tree moved as a whole (cmake --install --prefix)
        beside = os.path.normpath(os.path.join(os.path.dirname(__file__), relative))
        if os.path.exists(beside):
            return beside
    return SONAME
