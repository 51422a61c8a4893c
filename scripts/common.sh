# SPDX-License-Identifier: Apache-2.0
# Shared by demo.sh and test.sh: install what is missing, then configure and build.
# Sourced, not run. Honours BUILD_DIR (default: build) and JOBS (default: nproc).

HVD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$HVD_ROOT/build}
JOBS=${JOBS:-$(nproc)}

# Debian packages the build and the tests need.
HVD_APT_PACKAGES=(
  build-essential cmake pkg-config git
  libucx-dev libhwloc-dev libcmocka-dev
  openmpi-bin libopenmpi-dev   # mpirun: a launcher the tests run libhvd under
  libpmix-dev                  # PMIx's header: rendezvous through mpirun's or srun's PMIx server
  mpich                        # mpiexec.hydra: MPICH's launcher and its PMI-1 server
  slurmctld slurmd slurm-client munge   # a real Slurm (srun) on the cluster tests' hosts
  openssh-server iproute2      # the cluster tests: an sshd in each network-namespace host
  hwloc                        # hwloc-calc, hwloc-bind: hwloc's own view in the hvdrun tests
  clang-format
  python3 python3-dev python3-venv   # test helpers; the hvd Python package and its venv
  python3-numpy python3-pytest python3-pybind11 pybind11-dev
  python3-torch python3-sklearn      # hvd.torch on Debian's PyTorch 1.13; the digits example
  debhelper dh-python dpkg-dev fakeroot lintian rpm abigail-tools   # packaging, ABI tests
)

# The Java binding and its tests (scripts/test.sh's plain pass): a JDK, JNA, JUnit 5, and
# Debian's Maven with its offline repository (/usr/share/maven-repo).
HVD_APT_JAVA_PACKAGES=(default-jdk-headless libjna-java junit5 maven maven-debian-helper)

hvd_log() { printf '== %s\n' "$*"; }

# Installs the packages of HVD_APT_PACKAGES, and those given as arguments, that are not
# installed yet.
hvd_install_missing() {
  local missing=()
  for p in "${HVD_APT_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    hvd_log "all required Debian packages are installed"
    return 0
  fi
  hvd_log "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# A cmake >= 3.25: the first on PATH if new enough, else Debian's.
hvd_cmake() {
  local c
  for c in "$(command -v cmake)" /usr/bin/cmake; do
    [ -x "$c" ] || continue
    local v
    v=$("$c" --version | head -1 | awk '{print $3}')
    if [ "$(printf '%s\n3.25\n' "$v" | sort -V | head -1)" = "3.25" ]; then
      echo "$c"
      return 0
    fi
  done
  echo "no cmake >= 3.25 found" >&2
  return 1
}

# Configures (extra arguments go to cmake) and builds everything with warnings as errors.
hvd_build() {
  local cmake
  cmake=$(hvd_cmake) || return 1
  hvd_log "configuring in $BUILD_DIR"
  "$cmake" -S "$HVD_ROOT" -B "$BUILD_DIR" -DHVD_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null || return 1
  hvd_log "building with $JOBS jobs"
  "$cmake" --build "$BUILD_DIR" -j "$JOBS"
}

# NCCL's header for the GPU module (libhvd-nccl.so.1), from PyPI's nvidia-nccl-cu13 installed
# into the build tree, where the CUDA toolkit is (/usr/local/cuda, or nvcc on PATH). Prints
# the cmake arguments that point the build at it; nothing without a toolkit (no GPU module).
hvd_nccl_args() {
  local nvcc
  nvcc=$(command -v nvcc || true)
  [ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
  if [ -z "$nvcc" ]; then
    hvd_log "no CUDA toolkit: the GPU module is not built" >&2
    return 0
  fi
  local root="$BUILD_DIR/nccl/nvidia/nccl"
  if [ ! -f "$root/include/nccl.h" ]; then
    hvd_log "installing NCCL's header and library (PyPI nvidia-nccl-cu13) into $BUILD_DIR/nccl" >&2
    "$HVD_VENV/bin/python" -m pip install -q --target "$BUILD_DIR/nccl" nvidia-nccl-cu13 >&2
  fi
  echo "-DCMAKE_CUDA_COMPILER=$nvcc"
  echo "-DHVD_NCCL_ROOT=$root"
}

# A virtual environment with PyPI's PyTorch (hvd.torch is tested on it and on Debian's):
# $HVD_VENV (default .venv in the source tree), created or completed when something is missing.
HVD_VENV=${HVD_VENV:-$HVD_ROOT/.venv}
HVD_VENV_TORCH=${HVD_VENV_TORCH:-2.13.0}
hvd_python_venv() {
  local py="$HVD_VENV/bin/python"
  if [ -x "$py" ] && KERAS_BACKEND=torch "$py" -c "import numpy, pytest, keras, torch; assert torch.__version__.startswith('$HVD_VENV_TORCH')" 2>/dev/null; then
    hvd_log "python venv $HVD_VENV has torch $HVD_VENV_TORCH, keras, numpy and pytest"
    return 0
  fi
  hvd_log "preparing python venv $HVD_VENV (torch==$HVD_VENV_TORCH, keras, numpy, pytest)"
  [ -x "$py" ] || python3 -m venv "$HVD_VENV"
  "$py" -m pip install -q "torch==$HVD_VENV_TORCH" keras numpy pytest
}

# hvd_framework_venv [--system-site-packages] DIR WHAT CHECK PACKAGE...: a virtual environment
# over python3 (with --system-site-packages: over Debian's /usr/bin/python3 and its system
# packages) in DIR with PyPI's PACKAGEs, created or completed only when the Python statement
# CHECK fails in it. Prints the interpreter, or nothing when it cannot be made (the tests of
# WHAT are then skipped, with a message here).
hvd_framework_venv() {
  local make=(python3 -m venv)
  if [ "$1" = --system-site-packages ]; then
    make=(/usr/bin/python3 -m venv --system-site-packages)
    shift
  fi
  local dir=$1 what=$2 check=$3
  shift 3
  local py="$dir/bin/python"
  if [ -x "$py" ] && "$py" -c "$check" 2>/dev/null; then
    hvd_log "$what venv $dir is ready" >&2
    echo "$py"
    return 0
  fi
  hvd_log "preparing $what venv $dir ($*)" >&2
  if { [ -x "$py" ] || "${make[@]}" "$dir" >&2; } &&
    "$py" -m pip install -q "$@" >&2 &&
    "$py" -c "$check" 2>/dev/null; then
    echo "$py"
    return 0
  fi
  hvd_log "SKIPPING the $what tests: the venv $dir could not be made" >&2
}

# A virtual environment for hvd.jax (its XLA custom calls are built against this jaxlib's FFI
# headers, and its tests and digits example run on it, as do hvd.keras's on Keras's JAX
# backend): PyPI's newest jax and jaxlib (CPU), optax, keras, NumPy, scikit-learn and pytest,
# in $HVD_JAX_VENV (default: jax-venv in the build tree).
HVD_JAX_VENV=${HVD_JAX_VENV:-$BUILD_DIR/jax-venv}
hvd_jax_venv() {
  hvd_framework_venv "$HVD_JAX_VENV" hvd.jax \
    "import os; os.environ.setdefault('KERAS_BACKEND', 'jax'); import jax, jaxlib, optax, keras, numpy, sklearn, pytest" \
    jax jaxlib optax keras numpy scikit-learn pytest
}

# A virtual environment for hvd.tensorflow (its ops are built against this wheel's C API
# headers and library, and its tests run on it): PyPI's newest tensorflow-cpu, NumPy,
# scikit-learn and pytest, in $HVD_TF_VENV (default: tf-venv in the build tree).
HVD_TF_VENV=${HVD_TF_VENV:-$BUILD_DIR/tf-venv}
hvd_tf_venv() {
  hvd_framework_venv "$HVD_TF_VENV" hvd.tensorflow "import tensorflow, numpy, sklearn, pytest" \
    tensorflow-cpu numpy scikit-learn pytest
}

# A virtual environment for hvd.ray and hvd.spark: PyPI's ray and pyspark (Spark runs on the
# OpenJDK the Java packages bring) over Debian's Python with its system packages (PyTorch,
# NumPy, scikit-learn: the digits example runs on it), in $HVD_CLUSTER_VENV (default:
# cluster-venv in the build tree).
HVD_CLUSTER_VENV=${HVD_CLUSTER_VENV:-$BUILD_DIR/cluster-venv}
hvd_cluster_venv() {
  hvd_framework_venv --system-site-packages "$HVD_CLUSTER_VENV" "hvd.ray and hvd.spark" \
    "import ray, pyspark, torch, numpy, sklearn, pytest" ray pyspark pytest
}
