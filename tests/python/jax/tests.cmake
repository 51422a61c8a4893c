# SPDX-License-Identifier: Apache-2.0
# hvd.jax's suite (tests/python/jax) and its digits example, on HVD_PYTHON_JAX_INTERPRETER.
set(hvd_jax_py ${HVD_PYTHON_JAX_INTERPRETER})
execute_process(COMMAND ${hvd_jax_py} -c "import jax, optax, pytest, ml_dtypes"
                RESULT_VARIABLE hvd_jax_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT hvd_jax_rc EQUAL 0)
  message(WARNING "${hvd_jax_py} lacks jax, optax, pytest or ml_dtypes: the hvd.jax tests are "
                  "not added")
  return()
endif()
set(hvd_jax_env "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1"
    "JAX_PLATFORMS=cpu")
# Both ranks counts on the default backend; the other backend (it changes only the eager
# path, which the core suite covers on both) on 2 ranks.
list(GET hvd_py_backends -1 hvd_jax_default_backend)
foreach(backend ${hvd_py_backends})
  foreach(np 2 3)
    if(np EQUAL 3 AND NOT backend STREQUAL hvd_jax_default_backend)
      continue()
    endif()
    set(tname python.jax.${backend}.np${np})
    add_test(NAME ${tname}
      COMMAND $<TARGET_FILE:hvdrun> -np ${np} ${hvd_jax_py} -m pytest -x -q -p no:cacheprovider
              ${CMAKE_CURRENT_SOURCE_DIR}/python/jax
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(${tname} PROPERTIES LABELS "python;jax" TIMEOUT 300
      ENVIRONMENT "${hvd_jax_env};HVD_PY_BACKEND=${backend}")
  endforeach()
endforeach()

# The digits example on 1, 2 and 4 ranks reaches the 1-rank accuracy and loss.
execute_process(COMMAND ${hvd_jax_py} -c "import sklearn" RESULT_VARIABLE hvd_jax_rc
                OUTPUT_QUIET ERROR_QUIET)
if(hvd_jax_rc EQUAL 0)
  add_test(NAME python.jax.digits
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_digits.sh $<TARGET_FILE:hvdrun>
            ${HVD_PYTHON_BUILD_DIR} ${hvd_jax_py})
  set_tests_properties(python.jax.digits PROPERTIES LABELS "python;jax" TIMEOUT 300)
else()
  message(WARNING "${hvd_jax_py} lacks scikit-learn: the hvd.jax digits example is not tested")
endif()
