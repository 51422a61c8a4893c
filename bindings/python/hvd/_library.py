# SPDX-License-Identifier: Apache-2.0
"""Where libhvd.so.1 is: HVD_LIBRARY, else the path CMake recorded for this copy of the
package (build tree or install prefix), else the library's recorded place relative to the
installed package, else the dynamic loader's search path. Also where NCCL is, for the GPU
module: PyPI's nvidia-nccl wheel, which the dynamic loader does not search."""

import os
import sys

SONAME = "libhvd.so.1"
NCCL_SONAME = "libnccl.so.2"


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


def pypi_nccl(paths=None):
    """The NCCL of PyPI's nvidia-nccl-cu13 (or -cu12) wheel: the first
    <entry>/nvidia/nccl/lib/libnccl.so.2 over `paths` (default sys.path), else None."""
    for entry in sys.path if paths is None else paths:
        candidate = os.path.join(entry or os.curdir, "nvidia", "nccl", "lib", NCCL_SONAME)
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return None


def nccl_mapped(maps="/proc/self/maps"):
    """Whether some libnccl.so.2 is loaded into this process already (PyTorch's, say): the GPU
    module's dlopen of the bare name then gets that one."""
    try:
        with open(maps) as f:
            return any(NCCL_SONAME in line for line in f)
    except OSError:
        return False


def point_at_pypi_nccl(environ=None, paths=None, maps="/proc/self/maps"):
    """Sets HVD_NCCL_LIBRARY to PyPI's NCCL (pypi_nccl) where it is unset, the wheel is
    installed and no NCCL is loaded yet, so that the GPU module finds the wheel's library
    without LD_LIBRARY_PATH. Returns the path it set, else None. Never raises."""
    env = os.environ if environ is None else environ
    if env.get("HVD_NCCL_LIBRARY"):
        return None
    path = pypi_nccl(paths)  # a few stat calls: the process's maps are read only if it is there
    if path is None or nccl_mapped(maps):
        return None
    env["HVD_NCCL_LIBRARY"] = path
    return path
