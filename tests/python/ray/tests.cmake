# SPDX-License-Identifier: Apache-2.0
# hvd.ray (label ray) on HVD_PYTHON_CLUSTER_INTERPRETER: the executor's suite and the digits
# example, each on a local Ray cluster the test starts and shuts down itself (conftest.py).
set(hvd_ray_env "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_OP_TIMEOUT=60;PYTHONDONTWRITEBYTECODE=1"
    "RAY_USAGE_STATS_ENABLED=0")
add_test(NAME python.ray.executor
  COMMAND ${HVD_PYTHON_CLUSTER_INTERPRETER} -m pytest -x -q -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_arguments.py ${CMAKE_CURRENT_LIST_DIR}/test_placement.py
          ${CMAKE_CURRENT_LIST_DIR}/test_executor.py ${CMAKE_CURRENT_LIST_DIR}/test_failures.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python.ray.executor PROPERTIES LABELS "python;ray" TIMEOUT 150
  ENVIRONMENT "${hvd_ray_env}")

# Placement across nodes: two Ray nodes on this machine (Ray's cluster_utils).
add_test(NAME python.ray.nodes
  COMMAND ${HVD_PYTHON_CLUSTER_INTERPRETER} -m pytest -x -q -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_nodes.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python.ray.nodes PROPERTIES LABELS "python;ray" TIMEOUT 120
  ENVIRONMENT "${hvd_ray_env};HVD_RAY_TEST_NODES=2")

# The digits example on 2 and 3 Ray workers against hvdrun's run of torch_digits_train.py.
add_test(NAME python.ray.digits
  COMMAND ${HVD_PYTHON_CLUSTER_INTERPRETER} -m pytest -x -q -s -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_digits.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python.ray.digits PROPERTIES LABELS "python;ray" TIMEOUT 240
  ENVIRONMENT "${hvd_ray_env};HVD_TEST_HVDRUN=$<TARGET_FILE:hvdrun>")

# Elastic jobs on Ray (ElasticRayExecutor over hvdrun --elastic-controller): each test starts
# a Ray cluster of its own (HVD_RAY_TEST_NODES=0: none from conftest.py).
add_test(NAME python.ray.elastic
  COMMAND ${HVD_PYTHON_CLUSTER_INTERPRETER} -m pytest -x -q -p no:cacheprovider
          ${CMAKE_CURRENT_LIST_DIR}/test_elastic.py
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(python.ray.elastic PROPERTIES LABELS "python;ray;elastic" TIMEOUT 240
  ENVIRONMENT "${hvd_ray_env};HVD_RAY_TEST_NODES=0;HVD_HVDRUN=$<TARGET_FILE:hvdrun>")
