# install_units.cmake: run by `cmake --install` (cmake/install.cmake).
# conf/coopd.service and conf/coop.socket name /usr/local's paths; the
# installed copies name the install's.
function(coop_abs out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

coop_abs(sbindir "${COOP_SBINDIR}")
coop_abs(docdir "${COOP_DOCDIR}")
coop_abs(unitdir "${COOP_UNITDIR}")
# /usr's settings live in /etc (the GNU and FHS rule GNUInstallDirs follows)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT IS_ABSOLUTE "${COOP_SYSCONFDIR}")
  set(sysconfdir "/etc")
else()
  coop_abs(sysconfdir "${COOP_SYSCONFDIR}")
endif()

file(MAKE_DIRECTORY "${COOP_WORK}")
foreach(unit coopd.service coop.socket)
  file(READ "${COOP_SRC}/conf/${unit}" text)
  string(REPLACE "/usr/local/sbin/coopd" "${sbindir}/coopd" text "${text}")
  string(REPLACE "/etc/coop/coopd.ini" "${sysconfdir}/coop/coopd.ini" text "${text}")
  string(REPLACE "file:///usr/local/share/doc/coop/" "file://${docdir}/" text "${text}")
  file(WRITE "${COOP_WORK}/${unit}" "${text}")
  # file(INSTALL) adds DESTDIR and records the file in install_manifest.txt
  file(INSTALL DESTINATION "${unitdir}" TYPE FILE FILES "${COOP_WORK}/${unit}")
endforeach()
# The settings where the unit's --config names them: install(DESTINATION
# etc) put them in /usr/etc for /usr, and coopd.service then failed to
# start on a missing /etc/coop/coopd.ini.
file(INSTALL DESTINATION "${sysconfdir}/coop" TYPE FILE FILES "${COOP_SRC}/conf/coopd.ini")
