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
install(FILES ${PROJECT_SOURCE_DIR}/conf/coopd.ini DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/coop)
install(FILES ${PROJECT_SOURCE_DIR}/conf/coop.sysusers DESTINATION ${COOP_SYSUSERSDIR}
  RENAME coop.conf)
install(FILES ${PROJECT_SOURCE_DIR}/docs/daemon.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The units name coopd's and the settings' paths: written at install time,
# when the prefix is known (cmake/install_units.cmake).
install(CODE "
  set(COOP_SRC \"${PROJECT_SOURCE_DIR}\")
  set(COOP_WORK \"${PROJECT_BINARY_DIR}/units\")
  set(COOP_SBINDIR \"${CMAKE_INSTALL_SBINDIR}\")
  set(COOP_SYSCONFDIR \"${CMAKE_INSTALL_SYSCONFDIR}\")
  set(COOP_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
  set(COOP_UNITDIR \"${COOP_SYSTEMD_UNITDIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install_units.cmake\")")
