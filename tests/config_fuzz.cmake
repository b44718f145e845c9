# The config reader's fuzz target (tests/fuzz_config.c), following wire.cmake
# and graph.cmake: replayed with the project compiler on built-in seeds,
# conf/coopd.ini, the regression corpus tests/data/config_corpus (where
# scripts/fuzz puts crash inputs) and mutations of all of them, so every
# build fuzzes a little, gcc included; and, where clang has libFuzzer, a
# 30-second libFuzzer run. Included from tests/CMakeLists.txt; paths are
# relative to this file.

set(coop_config_root ${CMAKE_CURRENT_LIST_DIR}/..)
set(coop_config_corpus ${CMAKE_CURRENT_LIST_DIR}/data/config_corpus)

# UBSan only reports and goes on unless told to stop; a test must fail.
set(coop_config_test_env "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")

# coopd's target is not visible here: config.c, priority.c, authors.c and
# log.c again, and inih's imported target (pkg-config's targets are local
# to their directory).
pkg_check_modules(INIH REQUIRED IMPORTED_TARGET inih)

# About 1 s unsanitized, a few s with COOP_SANITIZE, on one core.
add_executable(fuzz_config_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c
  ${coop_config_root}/daemon/config.c ${coop_config_root}/daemon/priority.c
  ${coop_config_root}/daemon/authors.c ${coop_config_root}/daemon/log.c)
target_compile_definitions(fuzz_config_replay PRIVATE COOP_FUZZ_STANDALONE)
target_include_directories(fuzz_config_replay PRIVATE ${coop_config_root}/daemon)
target_link_libraries(fuzz_config_replay PRIVATE cooprt PkgConfig::INIH)
add_test(NAME fuzz_config_replay
  COMMAND fuzz_config_replay 50000 ${coop_config_root}/conf/coopd.ini ${coop_config_corpus})
set_tests_properties(fuzz_config_replay PROPERTIES TIMEOUT 120
  ENVIRONMENT "${coop_config_test_env}")

# Where clang has libFuzzer, a 30-second run on the replay's seeds,
# conf/coopd.ini and the regression corpus. Without the runtime (built by
# gcc, with OpenCL): COOP_FUZZ_RT_STUB answers config_validate's one
# question about it. inih is the system's shared library, so it is not
# instrumented: coverage and ASan see our code and inih's calls into it.
include(${CMAKE_CURRENT_LIST_DIR}/libfuzzer.cmake)
set(coop_config_conf ${CMAKE_CURRENT_BINARY_DIR}/fuzz_config_corpus/conf)
file(MAKE_DIRECTORY ${coop_config_conf})
configure_file(${coop_config_root}/conf/coopd.ini ${coop_config_conf}/coopd.ini COPYONLY)
coop_libfuzzer(NAME config
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c ${coop_config_root}/daemon/config.c
    ${coop_config_root}/daemon/priority.c ${coop_config_root}/daemon/authors.c
    ${coop_config_root}/daemon/log.c
  FLAGS -DCOOP_FUZZ_RT_STUB -I${coop_config_root}/daemon -I${coop_config_root}/megakernel
    -I${coop_config_root}/protocol ${INIH_CFLAGS}
  LIBS ${INIH_LDFLAGS}
  DEPENDS ${coop_config_root}/daemon/config.h ${coop_config_root}/daemon/log.h
    ${coop_config_root}/megakernel/coop_rt.h ${coop_config_root}/protocol/coop_errno.h
  SEED_DIRS ${coop_config_conf} ${coop_config_corpus})
