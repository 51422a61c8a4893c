# SPDX-License-Identifier: Apache-2.0
# The Java binding's JUnit 5 suite (bindings/java/src/test), label java: one JVM per rank under
# hvdrun -np 2 and -np 3 runs every test class through JUnit's console launcher; the
# peer-failure test (a rank killed mid-collective) runs alone, hvdrun then exiting with the
# killed rank's code. Needs the binding (a JDK >= 17 and libjna-java) and junit5.
if(NOT TARGET hvd_java)
  return()
endif()
if(HVD_SANITIZE)
  message(STATUS "Java tests: not added in a sanitized build (the JVM does not load a sanitized libhvd)")
  return()
endif()
set(junit_dir /usr/share/java)
find_file(HVD_JUNIT_CONSOLE junit-platform-console-standalone.jar PATHS ${junit_dir} NO_DEFAULT_PATH)
if(NOT HVD_JUNIT_CONSOLE)
  message(STATUS "Java tests: not added (needs JUnit 5: apt-get install junit5)")
  return()
endif()

set(classes ${CMAKE_CURRENT_BINARY_DIR}/java-test-classes)
file(GLOB HVD_JAVA_TEST_SRCS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/bindings/java/src/test/java/org/libhvd/*.java)
set(compile_cp ${HVD_JAVA_JAR}:${HVD_JNA_JAR}:${junit_dir}/junit-jupiter-api.jar:${junit_dir}/apiguardian-api.jar:${junit_dir}/opentest4j.jar)
add_custom_command(OUTPUT ${classes}/org/libhvd/Job.class
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${classes}
  COMMAND ${Java_JAVAC_EXECUTABLE} --release 17 -encoding UTF-8 -d ${classes} -cp ${compile_cp}
          ${HVD_JAVA_TEST_SRCS}
  DEPENDS ${HVD_JAVA_TEST_SRCS} hvd_java
  COMMENT "Compiling the Java binding's tests" VERBATIM)
add_custom_target(hvd_java_tests ALL DEPENDS ${classes}/org/libhvd/Job.class)

set(HVD_JAVA_RUN ${Java_JAVA_EXECUTABLE} -Djna.library.path=$<TARGET_FILE_DIR:hvd>)
set(junit ${HVD_JAVA_RUN} -jar ${HVD_JUNIT_CONSOLE} --disable-banner --disable-ansi-colors
          --fail-if-no-tests --details=tree -cp ${classes}:${HVD_JAVA_JAR}:${HVD_JNA_JAR}
          --select-package org.libhvd)
set(env "HVD_OP_TIMEOUT=60;HVD_START_TIMEOUT=60")
foreach(np 2 3)
  add_test(NAME java.junit.np${np}
    COMMAND $<TARGET_FILE:hvdrun> -np ${np} ${junit} --exclude-tag peer-failure)
  set_tests_properties(java.junit.np${np} PROPERTIES LABELS java TIMEOUT 300 ENVIRONMENT "${env}")
  math(EXPR survivors "${np} - 1")
  add_test(NAME java.peer_killed.np${np}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/expect_run.sh 137 "survivor ok" ${survivors} --
            $<TARGET_FILE:hvdrun> -np ${np} ${junit} --include-tag peer-failure)
  set_tests_properties(java.peer_killed.np${np} PROPERTIES LABELS java TIMEOUT 120 ENVIRONMENT "${env}")
endforeach()

# examples/java/LinearModel.java (run from source, as its comment shows) on 2 ranks: the loss
# each rank prints must be identical and fall.
add_test(NAME java.example_linear_model.np2
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/java/example_losses.sh 2 30 --
          $<TARGET_FILE:hvdrun> -np 2 ${HVD_JAVA_RUN} -cp ${HVD_JAVA_JAR}:${HVD_JNA_JAR}
          ${PROJECT_SOURCE_DIR}/examples/java/LinearModel.java 30)
set_tests_properties(java.example_linear_model.np2 PROPERTIES LABELS java TIMEOUT 120
  ENVIRONMENT "${env}")
