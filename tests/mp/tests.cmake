# SPDX-License-Identifier: Apache-2.0
# Multi-process tests, launched by hvdrun (and by the other launchers libhvd supports).
hvd_mp_program(mp_collectives)
hvd_mp_program(mp_peer_failure)
hvd_mp_program(mp_more_collectives)
hvd_mp_program(mp_join_and_fusion)
hvd_mp_program(mp_allgather_into)
hvd_mp_program(mp_mem_alloc)

# A failing assertion aborts the rank at once (the others then see a dead peer and stop),
# and no op waits longer than a minute.
set(HVD_MP_ENV "CMOCKA_TEST_ABORT=1;HVD_OP_TIMEOUT=60;HVD_START_TIMEOUT=60")

foreach(prog mp_collectives mp_more_collectives mp_join_and_fusion mp_allgather_into mp_mem_alloc)
  hvd_mp_test(${prog} NP 1 2 3 4 TIMEOUT 300)
  foreach(np 1 2 3 4)
    set_tests_properties(mp.${prog}.np${np} PROPERTIES ENVIRONMENT "${HVD_MP_ENV}")
  endforeach()
endforeach()

# Ranks pinned to one core each (hvdrun --bind-to core), where the waiting thread that runs
# the engine's passes (Engine::drive_while_waiting) shares its CPU with the engine thread;
# with more ranks than cores (np3 on 2 cores, :overload-allowed) ranks also share cores, and
# waiters yield after every poll. Failures and timeouts must reach a driving waiter too.
foreach(prog mp_collectives mp_more_collectives mp_join_and_fusion mp_allgather_into mp_mem_alloc)
  hvd_mp_test(${prog} NP 2 3 SUFFIX _bound HVDRUN_ARGS --bind-to core:overload-allowed TIMEOUT 300)
  foreach(np 2 3)
    set_tests_properties(mp.${prog}_bound.np${np} PROPERTIES ENVIRONMENT "${HVD_MP_ENV}")
  endforeach()
endforeach()
foreach(mode kill-midway abort)
  set(code 137)
  set(ok 1)
  if(mode STREQUAL "abort")
    set(code 0)
    set(ok 2)
  endif()
  add_test(NAME mp.peer_${mode}_bound.np2
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh ${code} "survivor ok" ${ok} --
            $<TARGET_FILE:hvdrun> -np 2 --bind-to core $<TARGET_FILE:mp_peer_failure> ${mode})
  set_tests_properties(mp.peer_${mode}_bound.np2 PROPERTIES
    LABELS mp TIMEOUT 120 ENVIRONMENT "${HVD_MP_ENV}")
endforeach()

# One setting each, on 3 ranks. Both ways of waiting whatever this host's CPU count: yielding
# after every poll (the default with more ranks than CPUs) and sleeping at once (HVD_SPIN_US=0:
# no polling, no driving). hvd_mem_alloc memory with the mapped path from 1 MB only (the
# slots reduce it below), with 512 KiB slots (the mixed and fused cases' sizes then take two
# slots: the paired chunks, whose first round carries the offers) and without shared memory at
# all (HVD_SHM=0: ordinary memory, on the transport).
foreach(case mp_collectives:HVD_SPIN_YIELD=1 mp_collectives:HVD_SPIN_US=0
             mp_mem_alloc:HVD_SHM_MAPPED_MIN_BYTES=1000000 mp_mem_alloc:HVD_SHM_SLOT_BYTES=524288
             mp_mem_alloc:HVD_SHM=0)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 prog)
  list(GET parts 1 setting)
  string(REGEX REPLACE "=.*" "" key ${setting})
  hvd_mp_test(${prog} NP 3 SUFFIX _${key} TIMEOUT 300)
  set_tests_properties(mp.${prog}_${key}.np3 PROPERTIES ENVIRONMENT "${HVD_MP_ENV};${setting}")
endforeach()

# Single-host jobs use the shared-memory collectives by default; the transport's are checked
# too (HVD_SHM=0). Ranks whose settings differ must still agree: a rank without shared memory
# keeps every rank on the transport, and the shared-memory tunables are rank 0's.
foreach(np 2 3)
  hvd_mp_test(mp_collectives NP ${np} SUFFIX _no_shm TIMEOUT 300)
  set_tests_properties(mp.mp_collectives_no_shm.np${np} PROPERTIES
    ENVIRONMENT "${HVD_MP_ENV};HVD_SHM=0")
endforeach()
hvd_mp_test(mp_allgather_into NP 3 SUFFIX _no_shm TIMEOUT 300)
set_tests_properties(mp.mp_allgather_into_no_shm.np3 PROPERTIES
  ENVIRONMENT "${HVD_MP_ENV};HVD_SHM=0")
foreach(setting HVD_SHM=0 HVD_SHM_ONE_SHOT_MAX_BYTES=0 HVD_SHM_SINGLE_COPY_MIN_BYTES=0)
  string(REGEX REPLACE "=.*" "" key ${setting})
  add_test(NAME mp.rank1_${key}.np3
    COMMAND $<TARGET_FILE:hvdrun> -np 3 ${CMAKE_CURRENT_SOURCE_DIR}/mp/env_on_rank.sh 1
            ${setting} $<TARGET_FILE:mp_collectives>)
  set_tests_properties(mp.rank1_${key}.np3 PROPERTIES LABELS mp TIMEOUT 300
    ENVIRONMENT "${HVD_MP_ENV}")
endforeach()

# Process sets smaller than the job get shared memory of their own on a single host (both
# 2-member sets of 4 ranks: 4 lines), and their collectives still pass on the transport
# (HVD_SHM=0).
add_test(NAME mp.process_set_shm.np4
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "shared memory for its 2 members" 4 --
          $<TARGET_FILE:hvdrun> -np 4 $<TARGET_FILE:mp_more_collectives>)
set_tests_properties(mp.process_set_shm.np4 PROPERTIES LABELS mp TIMEOUT 300
  ENVIRONMENT "${HVD_MP_ENV};HVD_LOG_LEVEL=debug")
# Two "hosts" of one machine (ranks by parity): no job-wide shared memory, but the even and
# the odd set each live on one host and get their own (4 lines again).
add_test(NAME mp.process_set_shm_two_hosts.np4
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "shared memory for its 2 members" 4 --
          $<TARGET_FILE:hvdrun> -np 4 ${CMAKE_CURRENT_SOURCE_DIR}/mp/host_by_parity.sh
          $<TARGET_FILE:mp_more_collectives>)
set_tests_properties(mp.process_set_shm_two_hosts.np4 PROPERTIES LABELS mp TIMEOUT 300
  ENVIRONMENT "${HVD_MP_ENV};HVD_LOG_LEVEL=debug")
hvd_mp_test(mp_more_collectives NP 3 SUFFIX _no_shm TIMEOUT 300)
# UCX without shared memory on one host (UCX_TLS=tcp,self, as where /dev/shm is too small for
# UCX) and the kernel's smallest socket buffers: UCX's sends then complete with bytes still in
# its buffer, so a rank that waits in libhvd's shared memory must drive UCX meanwhile, or a
# peer that waits for those bytes never gets them.
hvd_mp_test(mp_join_and_fusion NP 2 3 4 SUFFIX _tcp_only TIMEOUT 300)
foreach(np 2 3 4)
  set_tests_properties(mp.mp_join_and_fusion_tcp_only.np${np} PROPERTIES ENVIRONMENT
    "${HVD_MP_ENV};HVD_OP_TIMEOUT=20;UCX_TLS=tcp,self;UCX_TCP_SNDBUF=2k;UCX_TCP_RCVBUF=2k")
endforeach()

# Jobs spanning "hosts" of one machine (hosts of MP_RANKS_PER_HOST ranks in rank order): every
# allreduce runs hierarchically (HVD_HIERARCHICAL_ALLREDUCE=1; every rank says it will), with
# 2 hosts of 2, 2 hosts of 3, and hosts of 3 + 2 ranks; fused allreduces too. Hosts of 2 + 1
# ranks (a host's ranks apart) run it too; where every host runs one rank it runs flat.
foreach(spec "mp_collectives;4;2" "mp_collectives;6;3" "mp_collectives;5;3"
             "mp_join_and_fusion;4;2")
  list(GET spec 0 prog)
  list(GET spec 1 np)
  list(GET spec 2 per_host)
  add_test(NAME mp.${prog}_hierarchical_${per_host}per_host.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "hierarchical allreduce from 0 bytes"
            ${np} -- $<TARGET_FILE:hvdrun> -np ${np} ${CMAKE_CURRENT_SOURCE_DIR}/mp/host_by_block.sh
            $<TARGET_FILE:${prog}>)
  set_tests_properties(mp.${prog}_hierarchical_${per_host}per_host.np${np} PROPERTIES LABELS mp
    TIMEOUT 300 ENVIRONMENT
    "${HVD_MP_ENV};HVD_LOG_LEVEL=debug;HVD_HIERARCHICAL_ALLREDUCE=1;MP_RANKS_PER_HOST=${per_host}")
endforeach()
add_test(NAME mp.mp_more_collectives_uneven_hosts.np3
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "hierarchical allreduce from 0 bytes" 3
          -- $<TARGET_FILE:hvdrun> -np 3 ${CMAKE_CURRENT_SOURCE_DIR}/mp/host_by_parity.sh
          $<TARGET_FILE:mp_more_collectives>)
set_tests_properties(mp.mp_more_collectives_uneven_hosts.np3 PROPERTIES LABELS mp TIMEOUT 300
  ENVIRONMENT "${HVD_MP_ENV};HVD_LOG_LEVEL=debug;HVD_HIERARCHICAL_ALLREDUCE=1")
add_test(NAME mp.mp_more_collectives_one_rank_hosts.np3
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "allreduces run flat" 1 --
          $<TARGET_FILE:hvdrun> -np 3 ${CMAKE_CURRENT_SOURCE_DIR}/mp/host_by_block.sh
          $<TARGET_FILE:mp_more_collectives>)
set_tests_properties(mp.mp_more_collectives_one_rank_hosts.np3 PROPERTIES LABELS mp TIMEOUT 300
  ENVIRONMENT "${HVD_MP_ENV};HVD_HIERARCHICAL_ALLREDUCE=1;MP_RANKS_PER_HOST=1")
# Every allgather and broadcast hierarchical (HVD_HIERARCHICAL_ALLGATHER=1, _BROADCAST=1;
# every rank says it will) on hosts of MP_RANKS_PER_HOST ranks: 2+2, 2+1, 3+1 and 1+1+1, with
# the ragged, in-place and every-root suites.
set(hier_gather_env "HVD_HIERARCHICAL_ALLGATHER=1;HVD_HIERARCHICAL_BROADCAST=1")
foreach(spec "mp_collectives;4;2" "mp_collectives;3;2" "mp_collectives;3;1"
             "mp_allgather_into;4;3" "mp_allgather_into;3;2")
  list(GET spec 0 prog)
  list(GET spec 1 np)
  list(GET spec 2 per_host)
  add_test(NAME mp.${prog}_hierarchical_gather_${per_host}per_host.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0
            "hierarchical allgather from 0 to any bytes, broadcast from 0 bytes" ${np} --
            $<TARGET_FILE:hvdrun> -np ${np} ${CMAKE_CURRENT_SOURCE_DIR}/mp/host_by_block.sh
            $<TARGET_FILE:${prog}>)
  set_tests_properties(mp.${prog}_hierarchical_gather_${per_host}per_host.np${np} PROPERTIES
    LABELS mp TIMEOUT 300 ENVIRONMENT "${HVD_MP_ENV};HVD_LOG_LEVEL=debug;${hier_gather_env};MP_RANKS_PER_HOST=${per_host}")
endforeach()
set_tests_properties(mp.mp_more_collectives_no_shm.np3 PROPERTIES
  ENVIRONMENT "${HVD_MP_ENV};HVD_SHM=0")

# The mapped path must really be on where ranks may read each other's memory (the suites
# above pass through the slots too): every rank says so. Skipped where single copy is off too.
add_test(NAME mp.mp_mem_alloc_path_on.np2
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_mapped_on.sh 2
          -- $<TARGET_FILE:hvdrun> -np 2 $<TARGET_FILE:mp_mem_alloc>)
set_tests_properties(mp.mp_mem_alloc_path_on.np2 PROPERTIES LABELS mp TIMEOUT 300
  SKIP_RETURN_CODE 77 ENVIRONMENT "${HVD_MP_ENV};HVD_LOG_LEVEL=debug")

# kill: hvdrun reports the killed rank's code (128 + SIGKILL); every survivor passes.
foreach(np 2 3 4)
  math(EXPR survivors "${np} - 1")
  add_test(NAME mp.peer_killed.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 137 "survivor ok" ${survivors} --
            $<TARGET_FILE:hvdrun> -np ${np} $<TARGET_FILE:mp_peer_failure> kill)
  add_test(NAME mp.peer_aborted.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "survivor ok" ${np} --
            $<TARGET_FILE:hvdrun> -np ${np} $<TARGET_FILE:mp_peer_failure> abort)
  add_test(NAME mp.peer_killed_midway.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 137 "survivor ok" ${survivors} --
            $<TARGET_FILE:hvdrun> -np ${np} $<TARGET_FILE:mp_peer_failure> kill-midway)
  set_tests_properties(mp.peer_killed.np${np} mp.peer_aborted.np${np}
                       mp.peer_killed_midway.np${np} PROPERTIES
    LABELS mp TIMEOUT 120 ENVIRONMENT "${HVD_MP_ENV}")
endforeach()

# The same program under the other launchers libhvd recognises (no hvdrun, no HVD_* env).
foreach(style openmpi openmpi_secret torchrun slurm pmi)
  foreach(np 2 3)
    add_test(NAME mp.launch_${style}.np${np}
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh ${style} ${np}
              $<TARGET_FILE:mp_collectives>)
    set_tests_properties(mp.launch_${style}.np${np} PROPERTIES
      LABELS mp TIMEOUT 150 ENVIRONMENT "${HVD_MP_ENV}")
  endforeach()
endforeach()

# mpirun's ranks on (what look like) hosts of their own, with no rendezvous address and no
# HVD_SECRET: rank 0 hands its endpoint and a random secret over through mpirun's PMIx server.
if(PMIX_FOUND)
  foreach(np 2 3)
    add_test(NAME mp.launch_openmpi_hosts_pmix.np${np}
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0
              "rendezvous through PMIx: rank 0 listens" 1 --
              ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh openmpi_hosts ${np}
              $<TARGET_FILE:mp_collectives>)
    set_tests_properties(mp.launch_openmpi_hosts_pmix.np${np} PROPERTIES
      LABELS mp TIMEOUT 150 ENVIRONMENT "${HVD_MP_ENV};HVD_LOG_LEVEL=debug;MP_RANKS_PER_HOST=1")
  endforeach()
  # Without the PMIx library every rank's hvd_init fails at once, naming it.
  add_test(NAME mp.launch_openmpi_hosts_no_pmix.np2
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh openmpi_hosts 2
            $<TARGET_FILE:mp_init_fails> "cannot load /nonexistent/libpmix.so.2"
            HVD_ERR_UNSUPPORTED)
  set_tests_properties(mp.launch_openmpi_hosts_no_pmix.np2 PROPERTIES LABELS mp TIMEOUT 150
    ENVIRONMENT "HVD_PMIX_LIBRARY=/nonexistent/libpmix.so.2")
endif()

# MPICH's mpiexec (Hydra) gives no job id and no rendezvous address: the ranks always meet
# through its PMI-1 server (PMI_FD, or with -pmi-port a connection to PMI_PORT, where the
# server also tells each rank its rank and size), on one host or (as each rank is told) on
# hosts of their own. A rank that never calls hvd_init leaves the others timing out in the barrier, named;
# a PMI_FD that names no open file fails at once.
find_program(HVD_MPIEXEC_HYDRA mpiexec.hydra)
if(HVD_MPIEXEC_HYDRA)
  foreach(style hydra hydra_hosts hydra_port hydra_port_hosts)
    foreach(np 2 3)
      add_test(NAME mp.launch_${style}.np${np}
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0
                "rendezvous through PMI-1: rank 0 listens" 1 --
                ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh ${style} ${np}
                $<TARGET_FILE:mp_collectives>)
      set(hydra_env "${HVD_MP_ENV};HVD_LOG_LEVEL=debug")
      if(style MATCHES "_hosts$")
        set(hydra_env "${hydra_env};MP_RANKS_PER_HOST=1")
      endif()
      set_tests_properties(mp.launch_${style}.np${np} PROPERTIES
        LABELS mp TIMEOUT 150 ENVIRONMENT "${hydra_env}")
    endforeach()
  endforeach()
  add_test(NAME mp.launch_hydra_missing_rank.np3
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0
            "not every rank of the job reached hvd_init" 2 --
            ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh hydra_missing 3
            $<TARGET_FILE:mp_init_fails> "no barrier_out" HVD_ERR_TIMED_OUT)
  set_tests_properties(mp.launch_hydra_missing_rank.np3 PROPERTIES LABELS mp TIMEOUT 150
    ENVIRONMENT "HVD_START_TIMEOUT=3")
  add_test(NAME mp.launch_hydra_bad_fd.np2
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0
            "PMI_FD 999 is not an open file descriptor" 2 --
            ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh hydra_bad_fd 2
            $<TARGET_FILE:mp_init_fails> "PMI_FD 999" HVD_ERR_TRANSPORT)
  set_tests_properties(mp.launch_hydra_bad_fd.np2 PROPERTIES LABELS mp TIMEOUT 150)
endif()

# The response cache in process sets: each rank reads its engine's cache hits, so the program
# links the internal archive.
add_executable(mp_set_cache ${CMAKE_CURRENT_SOURCE_DIR}/mp/mp_set_cache.cc
                            ${CMAKE_CURRENT_SOURCE_DIR}/mp/mp_check.c)
target_link_libraries(mp_set_cache PRIVATE hvd_internal m)
target_compile_options(mp_set_cache PRIVATE ${HVD_WARNINGS})
hvd_mp_test(mp_set_cache NP 3 4 TIMEOUT 120)

# Launches without HVD_SECRET. On one host with an address (torchrun style): rank 0's secret
# is random, so an outsider who computes the one derivable from the run id and address is
# refused, and the job still completes. Ranks on (what look like) several hosts: hvd_init
# fails, asking for HVD_SECRET.
add_executable(mp_rdv_intruder ${CMAKE_CURRENT_SOURCE_DIR}/mp/mp_rdv_intruder.cc)
target_link_libraries(mp_rdv_intruder PRIVATE hvd_internal)
target_compile_options(mp_rdv_intruder PRIVATE ${HVD_WARNINGS})
add_test(NAME mp.launch_torchrun_intruder.np2
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_intruder.sh $<TARGET_FILE:mp_rdv_intruder>
          $<TARGET_FILE:mp_collectives>)
set_tests_properties(mp.launch_torchrun_intruder.np2 PROPERTIES
  LABELS mp TIMEOUT 150 ENVIRONMENT "${HVD_MP_ENV}" PASS_REGULAR_EXPRESSION "launch_intruder: ok")
hvd_mp_program(mp_init_fails)
foreach(np 2 3)
  add_test(NAME mp.launch_torchrun_hosts_no_secret.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_as.sh torchrun_hosts ${np}
            $<TARGET_FILE:mp_init_fails> "Set HVD_SECRET")
  set_tests_properties(mp.launch_torchrun_hosts_no_secret.np${np} PROPERTIES
    LABELS mp TIMEOUT 150 PASS_REGULAR_EXPRESSION "launch_as: torchrun_hosts np=${np} ok")
endforeach()

# A single-host rendezvous (no address from the launcher) whose directory someone else made
# first: skipped, and the job still meets.
foreach(style slurm pmi)
  add_test(NAME mp.launch_${style}_planted_dir.np2
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/launch_planted.sh ${style} 2
            $<TARGET_FILE:mp_collectives>)
  set_tests_properties(mp.launch_${style}_planted_dir.np2 PROPERTIES
    LABELS mp TIMEOUT 150 ENVIRONMENT "${HVD_MP_ENV}" PASS_REGULAR_EXPRESSION "launch_planted: ok")
endforeach()

# The stall inspector names the missing rank in the log and, past the shutdown time, fails
# the stalled op with a clear error on the ranks that enqueued it.
hvd_mp_program(mp_stall)
foreach(np 2 3)
  add_test(NAME mp.stall_inspector.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 0 "stall ok" ${np} --
            $<TARGET_FILE:hvdrun> -np ${np} $<TARGET_FILE:mp_stall>)
  set_tests_properties(mp.stall_inspector.np${np} PROPERTIES LABELS mp TIMEOUT 60
    ENVIRONMENT "HVD_STALL_CHECK_TIME_SECONDS=1;HVD_STALL_SHUTDOWN_TIME_SECONDS=3;CMOCKA_TEST_ABORT=1"
    # passes only if the log names the missing rank and expect_run saw every rank succeed
    PASS_REGULAR_EXPRESSION "stall inspector: 'lonely' \\(process set 0\\) has waited [0-9]+ s: not yet enqueued on rank"
    FAIL_REGULAR_EXPRESSION "expect_run: exit code|expect_run: '|FAILED")
endforeach()

# The timeline, recorded through the C ABI on every rank and checked as JSON.
hvd_mp_program(mp_timeline)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/timeline)
hvd_mp_test(mp_timeline NP 1 2 3 ARGS ${CMAKE_CURRENT_SOURCE_DIR}/mp/check_timeline.py
            ${CMAKE_CURRENT_BINARY_DIR}/timeline)

# Autotune: rank 0 searches fusion threshold, cycle time and the cache switch while small
# allreduces run; every rank follows the same sequence and ends with the same choice.
hvd_mp_program(mp_autotune)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/autotune)
foreach(np 2 3)
  set(log ${CMAKE_CURRENT_BINARY_DIR}/autotune/tune.np${np}.csv)
  # (a previous run's logs would end the search before it began)
  add_test(NAME mp.autotune.np${np}
    COMMAND sh -c "rm -f \"$1\"*; exec \"$2\" -np ${np} \"$3\" \"$1\"" autotune
            ${log} $<TARGET_FILE:hvdrun> $<TARGET_FILE:mp_autotune>)
  set_tests_properties(mp.autotune.np${np} PROPERTIES LABELS mp TIMEOUT 120
    ENVIRONMENT "HVD_AUTOTUNE=1;HVD_AUTOTUNE_LOG=${log};HVD_AUTOTUNE_STEPS_PER_SAMPLE=8;HVD_AUTOTUNE_WARMUP_SAMPLES=1;HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES=12")
endforeach()
# HVD_AUTOTUNE_SEARCH=grid: every point of fusion (6) x cycle time (5) x cache (2), in the
# same lockstep on every rank.
set(log ${CMAKE_CURRENT_BINARY_DIR}/autotune/tune.grid.csv)
add_test(NAME mp.autotune_grid.np3
  COMMAND sh -c "rm -f \"$1\"*; exec \"$2\" -np 3 \"$3\" \"$1\"" autotune
          ${log} $<TARGET_FILE:hvdrun> $<TARGET_FILE:mp_autotune>)
set_tests_properties(mp.autotune_grid.np3 PROPERTIES LABELS mp TIMEOUT 120
  ENVIRONMENT "HVD_AUTOTUNE=1;HVD_AUTOTUNE_SEARCH=grid;HVD_AUTOTUNE_LOG=${log};HVD_AUTOTUNE_STEPS_PER_SAMPLE=8;HVD_AUTOTUNE_WARMUP_SAMPLES=1;MP_EXPECT_POINTS=60")
# On 2 hosts of 2 ranks (host_by_block.sh) hierarchical allreduce is a switch of the search
# too (from any size when on), and every rank switches it at the same op.
set(log ${CMAKE_CURRENT_BINARY_DIR}/autotune/tune.hosts2x2.csv)
add_test(NAME mp.autotune_hierarchical_2per_host.np4
  COMMAND sh -c "rm -f \"$1\"*; exec \"$2\" -np 4 \"$3\" \"$4\" \"$1\"" autotune
          ${log} $<TARGET_FILE:hvdrun> ${CMAKE_CURRENT_SOURCE_DIR}/mp/host_by_block.sh
          $<TARGET_FILE:mp_autotune>)
set_tests_properties(mp.autotune_hierarchical_2per_host.np4 PROPERTIES LABELS mp TIMEOUT 180
  ENVIRONMENT "HVD_AUTOTUNE=1;HVD_AUTOTUNE_LOG=${log};HVD_AUTOTUNE_STEPS_PER_SAMPLE=8;HVD_AUTOTUNE_WARMUP_SAMPLES=1;HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES=12;HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES=0;MP_RANKS_PER_HOST=2;MP_EXPECT_HIERARCHICAL=1")

# Finalize right after large ops keeps the transport answering peers (no hang at teardown).
hvd_mp_program(mp_finalize_after_op)
hvd_mp_test(mp_finalize_after_op NP 4 TIMEOUT 120)

# A 2-rank job with 256 file descriptors per rank completes its collectives while a helper
# hammers rank 0's rendezvous port with 1,000 abusive connections (garbage, oversized
# lengths, slow senders, wrong secrets): the server's caps keep descriptors for the transport
# (no "Too many open files"), and the drops take a few warning lines, not one each.
add_test(NAME mp.rendezvous_abuse.np2
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_abuse_run.sh 3 --
          $<TARGET_FILE:hvdrun> -np 2 ${CMAKE_CURRENT_SOURCE_DIR}/mp/abuse_rendezvous.sh
          $<TARGET_FILE:mp_collectives>)
set_tests_properties(mp.rendezvous_abuse.np2 PROPERTIES LABELS mp TIMEOUT 120
  ENVIRONMENT "${HVD_MP_ENV}")
