# SPDX-License-Identifier: Apache-2.0
"""Where the package finds NCCL for the GPU module: PyPI's nvidia-nccl wheel on sys.path, handed
over through HVD_NCCL_LIBRARY unless the user set it or an NCCL is loaded already."""

import os
import subprocess
import sys

from hvd import _library


def wheel(root):
    """A tree laid out as the nvidia-nccl-cu13 wheel installs it, with a stand-in library file."""
    lib = root / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(b"not an ELF file")
    return str(lib / "libnccl.so.2")


def test_finds_the_wheel_on_the_path(tmp_path):
    path = wheel(tmp_path / "site")
    assert _library.pypi_nccl([str(tmp_path / "elsewhere"), str(tmp_path / "site")]) == path
    assert _library.pypi_nccl([str(tmp_path / "elsewhere")]) is None


def test_sees_an_nccl_already_loaded(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f10 r-xp 0 08:01 1 /usr/lib/libc.so.6\n")
    assert not _library.nccl_mapped(str(maps))
    maps.write_text("7f00-7f10 r-xp 0 08:01 2 /opt/site/nvidia/nccl/lib/libnccl.so.2\n")
    assert _library.nccl_mapped(str(maps))
    assert not _library.nccl_mapped(str(tmp_path / "missing"))


def test_sets_only_what_is_unset(tmp_path):
    path = wheel(tmp_path / "site")
    clean = tmp_path / "maps"
    clean.write_text("")
    env = {}
    assert _library.point_at_pypi_nccl(env, [str(tmp_path / "site")], str(clean)) == path
    assert env == {"HVD_NCCL_LIBRARY": path}
    env = {"HVD_NCCL_LIBRARY": "/opt/my/libnccl.so.2"}  # the user's choice stands
    assert _library.point_at_pypi_nccl(env, [str(tmp_path / "site")], str(clean)) is None
    assert env == {"HVD_NCCL_LIBRARY": "/opt/my/libnccl.so.2"}
    loaded = tmp_path / "loaded"
    loaded.write_text("7f00-7f10 r-xp 0 08:01 2 /x/libnccl.so.2\n")
    env = {}  # an NCCL is in the process already: the module's dlopen gets that one
    assert _library.point_at_pypi_nccl(env, [str(tmp_path / "site")], str(loaded)) is None
    assert env == {}
    assert _library.point_at_pypi_nccl(env, [str(tmp_path / "none")], str(clean)) is None
    assert env == {}


def test_import_hands_the_wheel_to_the_gpu_module(tmp_path):
    path = wheel(tmp_path / "site")
    env = dict(os.environ)
    env.pop("HVD_NCCL_LIBRARY", None)
    env["PYTHONPATH"] = os.pathsep.join([env.get("PYTHONPATH", ""), str(tmp_path / "site")])
    keep = ("HVD_PY_BACKEND", "HVD_LIBRARY")
    for key in [k for k in env if k.startswith("HVD_") and k not in keep]:
        del env[key]  # a process of its own, outside the job
    got = subprocess.run(
        [sys.executable, "-c", "import hvd, os; print(os.environ.get('HVD_NCCL_LIBRARY'))"],
        env=env, capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == path
