# SPDX-License-Identifier: Apache-2.0
# hvd.spark (labels python, spark) on HVD_PYTHON_CLUSTER_INTERPRETER: hvd.spark.run's suite
# and the digits example, each on a Spark session in local mode (local[3]) that the test
# starts and stops itself; the executors' Python workers import hvd from PYTHONPATH.
set(hvd_spark_env "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1")
add_test(NAME python.spark.run
  COMMAND ${HVD_PYTHON_CLUSTER_INTERPRETER} -m pytest -x -q -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_arguments.py ${CMAKE_CURRENT_LIST_DIR}/test_relay.py
          ${CMAKE_CURRENT_LIST_DIR}/test_run.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python.spark.run PROPERTIES LABELS "python;spark" TIMEOUT 150
  ENVIRONMENT "${hvd_spark_env}")

# The digits example with jobs of 2 and 3 ranks against hvdrun's run of torch_digits_train.py.
add_test(NAME python.spark.digits
  COMMAND ${HVD_PYTHON_CLUSTER_INTERPRETER} -m pytest -x -q -s -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_digits.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python.spark.digits PROPERTIES LABELS "python;spark" TIMEOUT 240
  ENVIRONMENT "${hvd_spark_env};HVD_TEST_HVDRUN=$<TARGET_FILE:hvdrun>")
