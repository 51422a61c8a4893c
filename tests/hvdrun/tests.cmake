# SPDX-License-Identifier: Apache-2.0
# Tests of the hvdrun launcher (label `hvdrun`). Included from tests/CMakeLists.txt, which
# provides PkgConfig::CMOCKA and HVD_WARNINGS; paths are relative to this file.
set(HVDRUN_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(HVDRUN_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/../../tools/hvdrun)

# Unit tests of the pure parts, compiled from hvdrun's own sources.
add_executable(test_hvdrun_units
    ${HVDRUN_TEST_DIR}/test_hvdrun_units.cc
    ${HVDRUN_SOURCE_DIR}/options.cc
    ${HVDRUN_SOURCE_DIR}/usage.cc
    ${HVDRUN_SOURCE_DIR}/binding_policy.cc
    ${HVDRUN_SOURCE_DIR}/hosts.cc
    ${HVDRUN_SOURCE_DIR}/rank_env.cc
    ${HVDRUN_SOURCE_DIR}/remote_command.cc
    ${HVDRUN_SOURCE_DIR}/network_interfaces.cc
    ${HVDRUN_SOURCE_DIR}/numbers.cc
    ${HVDRUN_SOURCE_DIR}/tuning.cc
    ${HVDRUN_SOURCE_DIR}/output_relay.cc)
target_include_directories(test_hvdrun_units PRIVATE ${HVDRUN_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(test_hvdrun_units PRIVATE PkgConfig::CMOCKA)
target_compile_options(test_hvdrun_units PRIVATE ${HVD_WARNINGS})
add_test(NAME hvdrun.units COMMAND test_hvdrun_units)
set_tests_properties(hvdrun.units PROPERTIES LABELS hvdrun TIMEOUT 30)

# Elastic mode: the membership protocol, the rules of rounds, discovery runs, the elastic
# options, the controller's line protocol.
add_executable(test_hvdrun_elastic
    ${HVDRUN_TEST_DIR}/test_hvdrun_elastic.cc
    ${HVDRUN_SOURCE_DIR}/controller_protocol.cc
    ${HVDRUN_SOURCE_DIR}/membership.cc
    ${HVDRUN_SOURCE_DIR}/host_blacklist.cc
    ${HVDRUN_SOURCE_DIR}/host_discovery.cc
    ${HVDRUN_SOURCE_DIR}/hosts.cc
    ${HVDRUN_SOURCE_DIR}/process.cc
    ${HVDRUN_SOURCE_DIR}/signals.cc
    ${HVDRUN_SOURCE_DIR}/output_relay.cc
    ${HVDRUN_SOURCE_DIR}/options.cc
    ${HVDRUN_SOURCE_DIR}/binding_policy.cc
    ${HVDRUN_SOURCE_DIR}/numbers.cc
    ${HVDRUN_SOURCE_DIR}/tuning.cc
    ${HVDRUN_SOURCE_DIR}/network_interfaces.cc)
target_include_directories(test_hvdrun_elastic PRIVATE ${HVDRUN_SOURCE_DIR})
target_link_libraries(test_hvdrun_elastic PRIVATE PkgConfig::CMOCKA hvdrun_membership)
target_compile_options(test_hvdrun_elastic PRIVATE ${HVD_WARNINGS})
add_test(NAME hvdrun.elastic_units COMMAND test_hvdrun_elastic)
set_tests_properties(hvdrun.elastic_units PROPERTIES LABELS hvdrun TIMEOUT 30)

# horovodrun's flags: tuning flags, the config file, host arguments, the grouped help.
add_executable(test_hvdrun_flags
    ${HVDRUN_TEST_DIR}/test_hvdrun_flags.cc
    ${HVDRUN_SOURCE_DIR}/options.cc
    ${HVDRUN_SOURCE_DIR}/usage.cc
    ${HVDRUN_SOURCE_DIR}/binding_policy.cc
    ${HVDRUN_SOURCE_DIR}/numbers.cc
    ${HVDRUN_SOURCE_DIR}/tuning.cc
    ${HVDRUN_SOURCE_DIR}/config_file.cc
    ${HVDRUN_SOURCE_DIR}/network_interfaces.cc
    ${HVDRUN_SOURCE_DIR}/remote_command.cc)
target_include_directories(test_hvdrun_flags PRIVATE ${HVDRUN_SOURCE_DIR})
target_link_libraries(test_hvdrun_flags PRIVATE PkgConfig::CMOCKA)
target_compile_options(test_hvdrun_flags PRIVATE ${HVD_WARNINGS})
add_test(NAME hvdrun.flags COMMAND test_hvdrun_flags)
set_tests_properties(hvdrun.flags PROPERTIES LABELS hvdrun TIMEOUT 30)

# --map-by / --bind-to placement on hwloc's synthetic machines, --report-bindings' text.
add_executable(test_hvdrun_placement
    ${HVDRUN_TEST_DIR}/test_hvdrun_placement.cc
    ${HVDRUN_SOURCE_DIR}/binding_policy.cc
    ${HVDRUN_SOURCE_DIR}/placement.cc
    ${HVDRUN_SOURCE_DIR}/cpu_binding.cc
    ${HVDRUN_SOURCE_DIR}/options.cc
    ${HVDRUN_SOURCE_DIR}/numbers.cc
    ${HVDRUN_SOURCE_DIR}/tuning.cc
    ${HVDRUN_SOURCE_DIR}/network_interfaces.cc)
target_include_directories(test_hvdrun_placement PRIVATE ${HVDRUN_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(test_hvdrun_placement PRIVATE PkgConfig::CMOCKA PkgConfig::HWLOC)
target_compile_options(test_hvdrun_placement PRIVATE ${HVD_WARNINGS})
add_test(NAME hvdrun.map_bind COMMAND test_hvdrun_placement)
set_tests_properties(hvdrun.map_bind PROPERTIES LABELS hvdrun TIMEOUT 30)

# End-to-end cases: hvdrun starting real processes (see hvdrun_cases.sh for each case).
set(HVDRUN_CASES env output no_prefix whole_lines exit_code signal sigkill_escalation
    elastic_stop elastic_start_wait forward_signals hvdrun_killed usage_errors missing_program placement hostfile aliases_and_info exports
    remote bind bind_synthetic rendezvous_port tuning_flags network_interfaces ssh_identity check_build)
foreach(case ${HVDRUN_CASES})
  add_test(NAME hvdrun.${case}
           COMMAND sh ${HVDRUN_TEST_DIR}/hvdrun_cases.sh $<TARGET_FILE:hvdrun> ${case})
  set_tests_properties(hvdrun.${case} PROPERTIES LABELS hvdrun TIMEOUT 60)
endforeach()
set_tests_properties(hvdrun.check_build PROPERTIES ENVIRONMENT "HVD_LIBRARY=$<TARGET_FILE:hvd>")
