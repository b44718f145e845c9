# install.cmake: what `cmake --install build --prefix P` puts beside the
# binaries (which the subdirectories install): the CMake package config,
# the systemd units and the default settings. Everything is relative to
# the prefix chosen at install time, so any prefix works (tests/install_prefix.sh).

# find_package(coop): coop::coop and coop::coop_static. The generated
# files find their prefix from their own place, as coop.pc does.
include(CMakePackageConfigHelpers)
set(COOP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/coop)
install(EXPORT coopTargets NAMESPACE coop:: DESTINATION ${COOP_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/coopConfig.cmake.in
  ${PROJECT_BINARY_DIR}/coopConfig.cmake INSTALL_DESTINATION ${COOP_CMAKE_DIR})
# 0.x: a minor version may change the API (coop.map's COOP_0.N)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/coopConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/coopConfig.cmake ${PROJECT_BINARY_DIR}/coopConfigVersion.cmake
  DESTINATION ${COOP_CMAKE_DIR})

# systemd: the unit, the optional socket and the user. Relative to the
# prefix (systemd reads /usr/lib and /usr/local/lib alike), or absolute.
set(COOP_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
  "where the systemd units go (relative to the install prefix, or absolute)")
set(COOP_SYSUSERSDIR "lib/sysusers.d" CACHE STRING
  "where the sysusers.d snippet goes (relative to the install prefix, or absolute)")
install(FILES ${PROJECT_SOURCE_DIR}/conf/coop.sysusers DESTINATION ${COOP_SYSUSERSDIR}
  RENAME coop.conf)
install(FILES ${PROJECT_SOURCE_DIR}/docs/daemon.md ${PROJECT_SOURCE_DIR}/docs/kernels.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The kernel SDK (docs/kernels.md, "The kernel SDK"): what a kernel is
# compiled against, under include/ so that compilers and editors find it
# on their include path as <coop/kernel/coop_kernel.h>. A kernel file never
# includes it (the runtime assembles the program from text); it serves
# offline syntax checks and editors. The .cl files hold coop_global_barrier
# and the task queues, which kernels call too.
set(coop_sdk_device ${PROJECT_SOURCE_DIR}/megakernel/device)
install(FILES ${PROJECT_SOURCE_DIR}/megakernel/sdk/coop_kernel.h
  ${PROJECT_SOURCE_DIR}/protocol/coop_limits.h ${coop_sdk_device}/dialect.h
  ${coop_sdk_device}/shared.h ${coop_sdk_device}/api.h ${coop_sdk_device}/primitives.cl
  ${coop_sdk_device}/barrier.cl ${coop_sdk_device}/taskqueue.cl
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/coop/kernel)
# The units name coopd's and the settings' paths: written at install time,
# when the prefix is known (cmake/install_units.cmake), which installs the
# settings too: their place (/etc for /usr) is known only then.
install(CODE "
  set(COOP_SRC \"${PROJECT_SOURCE_DIR}\")
  set(COOP_WORK \"${PROJECT_BINARY_DIR}/units\")
  set(COOP_SBINDIR \"${CMAKE_INSTALL_SBINDIR}\")
  set(COOP_SYSCONFDIR \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(COOP_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
  set(COOP_UNITDIR \"${COOP_SYSTEMD_UNITDIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install_units.cmake\")")
