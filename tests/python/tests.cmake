# SPDX-License-Identifier: Apache-2.0
# Python suites (pytest), run on every rank of hvdrun jobs of 2 and 3 ranks, once per
# backend (ctypes, and pybind when it was built) and, for hvd.torch, once per interpreter
# listed in HVD_PYTHON_TORCH_INTERPRETERS (scripts/test.sh: a venv with PyPI's torch and
# Debian's python3 with python3-torch).
if(NOT TARGET hvd_python)
  return()
endif()
# A sanitized libhvd loads only into an interpreter started with the sanitizer's runtime
# preloaded, and CPython and PyTorch then report leaks and races of their own. The bindings
# are thin layers over the C ABI, whose code the unit, mp and hvdrun suites check sanitized.
if(HVD_SANITIZE)
  message(STATUS "hvd Python tests: not added in a sanitized build (HVD_SANITIZE=${HVD_SANITIZE}); "
                 "the unit, mp and hvdrun suites cover the C core they bind")
  return()
endif()

set(HVD_PYTHON_TORCH_INTERPRETERS "" CACHE STRING
    "Python interpreters (with torch and pytest) that run the hvd.torch tests")

set(hvd_py_backends ctypes)
if(HVD_PYTHON_HAS_PYBIND)
  list(APPEND hvd_py_backends pybind)
endif()

# hvd_python_suite(<suite> <interpreter> <label>): tests/python/<suite> on 2 and 3 ranks.
function(hvd_python_suite suite interpreter label)
  foreach(backend ${hvd_py_backends})
    foreach(np 2 3)
      set(tname python.${suite}.${label}.${backend}.np${np})
      add_test(NAME ${tname}
        COMMAND $<TARGET_FILE:hvdrun> -np ${np} ${interpreter} -m pytest -x -q
                -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python/${suite}
        WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
      set_tests_properties(${tname} PROPERTIES LABELS python TIMEOUT 300
        ENVIRONMENT "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_PY_BACKEND=${backend};HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1")
    endforeach()
  endforeach()
endfunction()

# An interpreter's label: the torch version it carries ("torch2.13.0"), or "" without torch.
function(hvd_python_torch_label interpreter out)
  execute_process(
    COMMAND ${interpreter} -c
            "import numpy, pytest, torch; print('torch' + torch.__version__.split('+')[0])"
    OUTPUT_VARIABLE v OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    set(${out} ${v} PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

set(hvd_core_interpreter ${Python3_EXECUTABLE})
set(hvd_torch_labels)
foreach(interp ${HVD_PYTHON_TORCH_INTERPRETERS})
  hvd_python_torch_label(${interp} label)
  if(label STREQUAL "")
    message(WARNING "${interp} lacks torch, numpy or pytest: its hvd.torch tests are not added")
    continue()
  endif()
  if(label IN_LIST hvd_torch_labels)
    continue()
  endif()
  list(APPEND hvd_torch_labels ${label})
  hvd_python_suite(torch ${interp} ${label})
  set(hvd_core_interpreter ${interp})
  if(NOT TEST bench.python_np2)
    # bench/python_allreduce_perf.py (scripts/bench.sh's Python cases) in the benchmarks'
    # format, results checked: per call on 2 ranks, a 16-tensor step on 3.
    foreach(spec "np2;2;4;-b;8;-e;512;-x;none" "many16_np3;3;1;--many;16;-b;1K")
      list(POP_FRONT spec tname np nsizes)
      add_test(NAME bench.python_${tname}
        COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/bench/check_bench_output.sh ${nsizes} --
                $<TARGET_FILE:hvdrun> -np ${np} --no-prefix ${interp}
                ${PROJECT_SOURCE_DIR}/bench/python_allreduce_perf.py -t 0.02 ${spec})
      set_tests_properties(bench.python_${tname} PROPERTIES LABELS "bench;python" TIMEOUT 120
        ENVIRONMENT "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1")
    endforeach()
  endif()
endforeach()

execute_process(COMMAND ${hvd_core_interpreter} -c "import numpy, pytest"
                RESULT_VARIABLE hvd_core_rc OUTPUT_QUIET ERROR_QUIET)
if(hvd_core_rc EQUAL 0)
  hvd_python_suite(core ${hvd_core_interpreter} numpy)
  # Ranks pinned one per CPU: waits (hvd.synchronize) run the engine's passes on the calling
  # thread, which shares its CPU with the engine thread; polls (hvd.poll) leave them to it.
  add_test(NAME python.core.numpy.ctypes.bound.np2
    COMMAND $<TARGET_FILE:hvdrun> -np 2 --bind-to core ${hvd_core_interpreter} -m pytest -x -q
            -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python/core
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(python.core.numpy.ctypes.bound.np2 PROPERTIES LABELS python TIMEOUT 300
    ENVIRONMENT "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_PY_BACKEND=ctypes;HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1")
else()
  message(WARNING "${hvd_core_interpreter} lacks numpy or pytest: the hvd Python tests are not added")
endif()

# hvd.jax (label jax) on the JAX interpreter its custom calls were built against
# (HVD_PYTHON_JAX_INTERPRETER, bindings/python/jax_ffi), with each backend on 2 and 3 ranks.
if(HVD_PYTHON_HAS_JAX)
  include(${CMAKE_CURRENT_LIST_DIR}/jax/tests.cmake)
endif()

# hvd.keras (label keras) on Keras 3's JAX backend (the JAX interpreter) and its torch backend
# (a torch interpreter with keras).
include(${CMAKE_CURRENT_LIST_DIR}/keras/tests.cmake)

# hvd.tensorflow (label tensorflow) on the TensorFlow interpreter its ops were built against
# (HVD_PYTHON_TF_INTERPRETER, bindings/python/tf_ops), on 2 and 3 ranks.
if(HVD_PYTHON_HAS_TF)
  include(${CMAKE_CURRENT_LIST_DIR}/tensorflow/tests.cmake)
endif()

# hvd.ray and hvd.spark (labels ray, spark) on HVD_PYTHON_CLUSTER_INTERPRETER: a Python with
# ray, pyspark, PyTorch, scikit-learn and pytest (scripts/test.sh: the cluster venv in the
# build tree). Each engine's tests start a local cluster of their own (Ray's ray.init, Spark's
# local[N] master) and bound their time.
set(HVD_PYTHON_CLUSTER_INTERPRETER "" CACHE STRING
    "Python with ray, pyspark, torch, scikit-learn and pytest for the hvd.ray/hvd.spark tests")
if(NOT HVD_PYTHON_CLUSTER_INTERPRETER STREQUAL "")
  execute_process(COMMAND ${HVD_PYTHON_CLUSTER_INTERPRETER} -c
                          "import ray, pyspark, torch, numpy, sklearn, pytest"
                  RESULT_VARIABLE hvd_cluster_rc OUTPUT_QUIET ERROR_QUIET)
  if(hvd_cluster_rc EQUAL 0)
    include(${CMAKE_CURRENT_LIST_DIR}/ray/tests.cmake OPTIONAL)
    include(${CMAKE_CURRENT_LIST_DIR}/spark/tests.cmake OPTIONAL)
  else()
    message(WARNING "${HVD_PYTHON_CLUSTER_INTERPRETER} lacks ray, pyspark, torch, numpy, "
                    "scikit-learn or pytest: the hvd.ray and hvd.spark tests are not added")
  endif()
endif()

# The examples: the digits classifier on 1, 2 and 4 ranks reaches the 1-rank accuracy (Debian's
# python3 has scikit-learn), the synthetic benchmark runs with hvd and with DDP.
list(LENGTH HVD_PYTHON_TORCH_INTERPRETERS hvd_n_torch)
if(hvd_n_torch GREATER 0 AND EXISTS /usr/bin/python3)
  list(GET HVD_PYTHON_TORCH_INTERPRETERS 0 hvd_first_torch)
  add_test(NAME python.examples
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python/examples/test_examples.sh
            $<TARGET_FILE:hvdrun> ${HVD_PYTHON_BUILD_DIR} ${hvd_first_torch} /usr/bin/python3)
  set_tests_properties(python.examples PROPERTIES LABELS python TIMEOUT 240 SKIP_RETURN_CODE 77)
  include(${CMAKE_CURRENT_LIST_DIR}/elastic/tests.cmake)
endif()

# A Python job that MPICH's mpiexec starts with -pmi-port (its process manager, not the
# environment, names rank and size): hvd.init() finds it, three times in one process.
find_program(HVD_PY_MPIEXEC_HYDRA mpiexec.hydra)
if(hvd_core_rc EQUAL 0 AND HVD_PY_MPIEXEC_HYDRA)
  add_test(NAME python.launch_hydra_port.np2
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "reinit ok" 2 --
            ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh hydra_port 2 ${hvd_core_interpreter}
            ${CMAKE_CURRENT_SOURCE_DIR}/python/launch/reinit_job.py)
  set_tests_properties(python.launch_hydra_port.np2 PROPERTIES LABELS python TIMEOUT 150
    ENVIRONMENT "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};PYTHONDONTWRITEBYTECODE=1")
endif()

# `cmake --install` into another prefix: the installed package finds the installed library.
if(hvd_core_rc EQUAL 0)  # (the 1-rank job uses NumPy)
  add_test(NAME python.install
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python/install_test.sh ${CMAKE_COMMAND}
            ${PROJECT_BINARY_DIR} ${hvd_core_interpreter})
  set_tests_properties(python.install PROPERTIES LABELS python TIMEOUT 120)
endif()
