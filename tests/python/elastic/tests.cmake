# SPDX-License-Identifier: Apache-2.0
# Elastic jobs (label elastic, also python): hvdrun --min-np/--max-np/--host-discovery-script
# with hvd.torch.elastic on this machine, on the first torch interpreter, once per backend
# (test_elastic.py says what each case checks). Included from tests/python/tests.cmake with
# hvd_first_torch and hvd_py_backends set.
#
# hvdrun's side of membership changes (a host removed, below --min-np with discovery,
# --reset-limit, --slots, --blacklist-cooldown-range) is the same whatever the backend: those
# cases run on the first only.
list(GET hvd_py_backends 0 first_backend)
foreach(backend ${hvd_py_backends})
  set(elastic_cases shrink shrink_rank0 shrink_ssh below_min grow)
  if(backend STREQUAL first_backend)
    list(APPEND elastic_cases remove_host below_min_recover below_min_timeout reset_limit
                              blacklist_cooldown)
  endif()
  foreach(case ${elastic_cases})
    set(tname python.elastic.${case}.${backend})
    add_test(NAME ${tname}
      COMMAND ${hvd_first_torch} ${CMAKE_CURRENT_LIST_DIR}/test_elastic.py
              $<TARGET_FILE:hvdrun> ${hvd_first_torch} ${case})
    set_tests_properties(${tname} PROPERTIES LABELS "python;elastic" TIMEOUT 180
      ENVIRONMENT "PYTHONPATH=${HVD_PYTHON_BUILD_DIR};HVD_PY_BACKEND=${backend};PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endforeach()
