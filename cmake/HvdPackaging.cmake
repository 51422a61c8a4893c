# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` ships besides the library, its headers and the programs (installed
# where they are built: src/, tools/hvdrun, bench/): the pkg-config file and the CMake package
# (hvd::hvd). Included from the top-level CMakeLists.txt after the targets exist.
include(CMakePackageConfigHelpers)

set(HVD_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hvd)

# ---------------------------------------------------------------- pkg-config
# Relative install dirs stay relative to ${prefix}, so a packager may override prefix alone.
function(hvd_pc_dir out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
set(HVD_PC_PREFIX ${CMAKE_INSTALL_PREFIX})
hvd_pc_dir(HVD_PC_LIBDIR ${CMAKE_INSTALL_LIBDIR})
hvd_pc_dir(HVD_PC_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
configure_file(${PROJECT_SOURCE_DIR}/pkgconfig/hvd.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/hvd.pc
  @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/hvd.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ---------------------------------------------------------------- CMake package
# src/CMakeLists.txt puts the hvd target in the export set hvdTargets.
install(EXPORT hvdTargets NAMESPACE hvd:: DESTINATION ${HVD_CMAKE_INSTALL_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hvdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/hvdConfig.cmake
  INSTALL_DESTINATION ${HVD_CMAKE_INSTALL_DIR}
  NO_SET_AND_CHECK_MACRO)
# find_package(hvd 0.1) accepts any later 0.x release, not 1.x.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/hvdConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/hvdConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/hvdConfigVersion.cmake
  DESTINATION ${HVD_CMAKE_INSTALL_DIR})
