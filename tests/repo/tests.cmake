# SPDX-License-Identifier: Apache-2.0
find_package(Git QUIET)
# Repository hygiene: license lines and formatting of the tracked sources (need git and the
# source tree's .git; skipped where the tree is not a git checkout).
if(EXISTS ${PROJECT_SOURCE_DIR}/.git AND GIT_EXECUTABLE)
  add_test(NAME repo.spdx COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/repo/spdx.sh ${PROJECT_SOURCE_DIR})
  add_test(NAME repo.format COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/repo/format.sh ${PROJECT_SOURCE_DIR})
  set_tests_properties(repo.spdx repo.format PROPERTIES LABELS repo TIMEOUT 120
    SKIP_RETURN_CODE 77)
endif()
