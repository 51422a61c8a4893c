# SPDX-License-Identifier: Apache-2.0
# hvd.tensorflow's suite (tests/python/tensorflow) on HVD_PYTHON_TF_INTERPRETER, the Python
# whose TensorFlow the ops were built against, on 2 and 3 ranks. The ops reach libhvd through
# their own library, so the suite runs on the default backend only.
execute_process(COMMAND ${HVD_PYTHON_TF_INTERPRETER} -c "import tensorflow, numpy, pytest"
                RESULT_VARIABLE hvd_tf_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT hvd_tf_rc EQUAL 0)
  message(WARNING "${HVD_PYTHON_TF_INTERPRETER} lacks tensorflow, numpy or pytest: the "
                  "hvd.tensorflow tests are not added")
  return()
endif()
list(GET hvd_py_backends -1 hvd_tf_backend)
foreach(np 2 3)
  set(tname python.tensorflow.np${np})
  add_test(NAME ${tname}
    COMMAND $<TARGET_FILE:hvdrun> -np ${np} ${HVD_PYTHON_TF_INTERPRETER} -m pytest -x -q
            -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python/tensorflow
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(${tname} PROPERTIES LABELS "python;tensorflow" TIMEOUT 300
    ENVIRONMENT "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1;HVD_PY_BACKEND=${hvd_tf_backend};TF_CPP_MIN_LOG_LEVEL=2")
endforeach()

# hvd.tensorflow.elastic under hvdrun --min-np/--max-np: a worker dies, the survivors re-form
# and finish with the reference weights (tests/python/elastic/test_elastic.py, case shrink_tf).
add_test(NAME python.tensorflow.elastic.shrink
  COMMAND ${HVD_PYTHON_TF_INTERPRETER} ${CMAKE_CURRENT_LIST_DIR}/../elastic/test_elastic.py
          $<TARGET_FILE:hvdrun> ${HVD_PYTHON_TF_INTERPRETER} shrink_tf)
set_tests_properties(python.tensorflow.elastic.shrink PROPERTIES LABELS "python;tensorflow;elastic"
  TIMEOUT 180 ENVIRONMENT "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_PY_BACKEND=${hvd_tf_backend};PYTHONDONTWRITEBYTECODE=1;TF_CPP_MIN_LOG_LEVEL=2")

# The digits example (examples/python/tensorflow_digits.py) on 1, 2 and 4 ranks reaches the
# 1-rank accuracy and loss.
execute_process(COMMAND ${HVD_PYTHON_TF_INTERPRETER} -c "import sklearn" RESULT_VARIABLE hvd_tf_rc
                OUTPUT_QUIET ERROR_QUIET)
if(hvd_tf_rc EQUAL 0)
  add_test(NAME python.tensorflow.digits
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/../jax/test_digits.sh $<TARGET_FILE:hvdrun>
            ${HVD_PYTHON_BUILD_DIR} ${HVD_PYTHON_TF_INTERPRETER})
  set_tests_properties(python.tensorflow.digits PROPERTIES LABELS "python;tensorflow" TIMEOUT 300
    ENVIRONMENT "HVD_PY_BACKEND=${hvd_tf_backend};HVD_DIGITS_EXAMPLE=tensorflow_digits.py;TF_CPP_MIN_LOG_LEVEL=2")
else()
  message(WARNING "${HVD_PYTHON_TF_INTERPRETER} lacks scikit-learn: the hvd.tensorflow digits "
                  "example is not tested")
endif()
