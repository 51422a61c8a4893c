# SPDX-License-Identifier: Apache-2.0
# Multi-host tests (label cluster): each builds hosts as network namespaces with a real sshd
# (tests/cluster/netns_cluster.py, ssh_hosts.py) and runs one case of cluster_cases.py on them.
# Skipped (exit 77) where namespaces cannot be made (not root, no iproute2) or sshd is missing.
set(HVD_CLUSTER_CASES hvdrun bind hierarchical congested congested_flat hvdrun_stopped mpirun
    hydra slurm interfaces unreachable blackholed shaped lossy)
find_package(Python3 COMPONENTS Interpreter)
foreach(case ${HVD_CLUSTER_CASES})
  if(NOT Python3_Interpreter_FOUND)
    break()
  endif()
  add_test(NAME cluster.${case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cluster_cases.py --deadline 50
            --hvdrun $<TARGET_FILE:hvdrun> --programs $<TARGET_FILE_DIR:mp_collectives> ${case})
  set_tests_properties(cluster.${case} PROPERTIES LABELS cluster TIMEOUT 60 SKIP_RETURN_CODE 77)
endforeach()

# A real Slurm on the hosts (slurm_hosts.py: munged, slurmctld and a slurmd per host) under
# srun --mpi=pmix, --mpi=pmi2 and with reserved ports; skipped where it is not installed.
# Alone on the machine: its daemons and 6 ranks share the CPUs.
foreach(case srun_pmix srun_pmi2 srun_resv_ports)
  if(NOT Python3_Interpreter_FOUND)
    break()
  endif()
  add_test(NAME cluster.${case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cluster_cases.py --deadline 110
            --hvdrun $<TARGET_FILE:hvdrun> --programs $<TARGET_FILE_DIR:mp_collectives> ${case})
  set_tests_properties(cluster.${case} PROPERTIES LABELS cluster TIMEOUT 120
    SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endforeach()

# Elastic jobs across the hosts (hvd.torch.elastic under hvdrun --min-np): a worker's host
# loses it mid-run (elastic), a host vanishes from the network (elastic_host_lost, and
# elastic_below_min where that leaves too few workers), the discovery script adds a host
# (elastic_grow) or drops one (elastic_remove), and the
# others finish as a smaller job; needs the hvd package's build.
foreach(case elastic elastic_host_lost elastic_grow elastic_below_min elastic_remove)
  if(NOT (Python3_Interpreter_FOUND AND TARGET hvd_python))
    break()
  endif()
  add_test(NAME cluster.${case}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cluster_cases.py --deadline 170
            --hvdrun $<TARGET_FILE:hvdrun> --programs $<TARGET_FILE_DIR:mp_collectives>
            --python-path ${HVD_PYTHON_BUILD_DIR} ${case})
  set_tests_properties(cluster.${case} PROPERTIES LABELS "cluster;elastic" TIMEOUT 180
    SKIP_RETURN_CODE 77)
endforeach()
