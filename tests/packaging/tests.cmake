# SPDX-License-Identifier: Apache-2.0
# Packaging tests (label `packaging`, only with -DHVD_BUILD_PACKAGING_TESTS=ON, which
# scripts/test.sh sets): build the Debian packages and the RPMs from a copy of the tree under
# <build>/packaging, check their contents, lintian, and build and run programs against the
# unpacked .deb files through pkg-config alone and through find_package(hvd) alone, and
# import the packaged Python package and run a Java program against the packaged jar. Included
# from tests/CMakeLists.txt.
if(NOT HVD_BUILD_PACKAGING_TESTS)
  return()
endif()

set(HVD_PKG_TOOLS dpkg-buildpackage dh dpkg-architecture lintian rpmbuild pkg-config)
foreach(tool ${HVD_PKG_TOOLS})
  find_program(HVD_TOOL_${tool} ${tool})
  if(NOT HVD_TOOL_${tool})
    message(FATAL_ERROR "HVD_BUILD_PACKAGING_TESTS needs ${tool}: apt-get install debhelper "
      "dpkg-dev fakeroot lintian rpm (scripts/test.sh installs them)")
  endif()
endforeach()

set(HVD_PKG_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(HVD_PKG_OUT ${PROJECT_BINARY_DIR}/packaging)
# 1 when bench/ defines hvd_bench (decided at generate time, whatever the include order).
set(HVD_PKG_WITH_BENCH $<IF:$<TARGET_EXISTS:hvd_bench>,1,0>)

# hvd_pkg_test(<name> <fixture this needs or NONE> <script> <args...>)
function(hvd_pkg_test name needs script)
  add_test(NAME packaging.${name} COMMAND bash ${HVD_PKG_TEST_DIR}/${script} ${ARGN})
  set_tests_properties(packaging.${name} PROPERTIES LABELS packaging TIMEOUT 180)
  if(NOT needs STREQUAL "NONE")
    set_tests_properties(packaging.${name} PROPERTIES FIXTURES_REQUIRED ${needs})
  endif()
endfunction()

# Where this build made the GPU module, the packages are built with it too (libhvd-nccl1, the
# RPM libhvd-nccl): the same nvcc and NCCL header are handed to the package builds.
set(HVD_PKG_GPU "")
set(HVD_PKG_WITH_GPU 0)
if(HVD_GPU_MODULE_BUILT)
  set(HVD_PKG_WITH_GPU 1)
  if(HVD_NCCL_ROOT)
    set(HVD_PKG_NCCL_ROOT ${HVD_NCCL_ROOT})
  else()
    get_filename_component(HVD_PKG_NCCL_ROOT ${HVD_NCCL_INCLUDE_DIR} DIRECTORY)
  endif()
  set(HVD_PKG_GPU ${CMAKE_CUDA_COMPILER} ${HVD_PKG_NCCL_ROOT})
endif()

# Each package build compiles the library once with -j2: tell ctest it takes both cores.
hvd_pkg_test(deb_build NONE deb_build.sh ${PROJECT_SOURCE_DIR} ${HVD_PKG_OUT}/deb ${PROJECT_VERSION}
  ${HVD_PKG_GPU})
set_tests_properties(packaging.deb_build PROPERTIES FIXTURES_SETUP hvd_debs PROCESSORS 2
  TIMEOUT 600)
hvd_pkg_test(deb_contents hvd_debs deb_contents.sh ${HVD_PKG_OUT}/deb ${PROJECT_VERSION}
  ${HVD_LIBRARY_VERSION} ${HVD_PKG_WITH_BENCH})
hvd_pkg_test(deb_lintian hvd_debs deb_lintian.sh ${HVD_PKG_OUT}/deb)
hvd_pkg_test(deb_pkgconfig hvd_debs deb_consumer.sh pkgconfig ${HVD_PKG_OUT}/deb ${CMAKE_COMMAND})
hvd_pkg_test(deb_find_package hvd_debs deb_consumer.sh cmake ${HVD_PKG_OUT}/deb ${CMAKE_COMMAND})

hvd_pkg_test(rpm_build NONE rpm_build.sh ${PROJECT_SOURCE_DIR} ${HVD_PKG_OUT}/rpm ${PROJECT_VERSION}
  ${HVD_PKG_GPU})
set_tests_properties(packaging.rpm_build PROPERTIES FIXTURES_SETUP hvd_rpms PROCESSORS 2
  TIMEOUT 600)
hvd_pkg_test(rpm_contents hvd_rpms rpm_contents.sh ${HVD_PKG_OUT}/rpm ${PROJECT_VERSION}
  ${HVD_LIBRARY_VERSION} ${HVD_PKG_WITH_BENCH} ${HVD_PKG_WITH_GPU})
hvd_pkg_test(deb_python hvd_debs deb_python.sh ${HVD_PKG_OUT}/deb)
hvd_pkg_test(deb_java hvd_debs deb_java.sh ${HVD_PKG_OUT}/deb)
