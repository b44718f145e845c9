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

# coopd's target is not visible here: config.c and log.c again, and inih's
# imported target (pkg-config's targets are local to their directory).
pkg_check_modules(INIH REQUIRED IMPORTED_TARGET inih)

# About 1 s unsanitized, a few s with COOP_SANITIZE, on one core.
add_executable(fuzz_config_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c
  ${coop_config_root}/daemon/config.c ${coop_config_root}/daemon/log.c)
target_compile_definitions(fuzz_config_replay PRIVATE COOP_FUZZ_STANDALONE)
target_include_directories(fuzz_config_replay PRIVATE ${coop_config_root}/daemon)
target_link_libraries(fuzz_config_replay PRIVATE cooprt PkgConfig::INIH)
add_test(NAME fuzz_config_replay
  COMMAND fuzz_config_replay 50000 ${coop_config_root}/conf/coopd.ini ${coop_config_corpus})
set_tests_properties(fuzz_config_replay PROPERTIES TIMEOUT 120
  ENVIRONMENT "${coop_config_test_env}")

# libFuzzer needs clang: wire.cmake probes for it; probe here when this file
# is included without (or before) it.
if(NOT DEFINED coop_libfuzzer)
  find_program(COOP_CLANG clang)
  set(coop_libfuzzer OFF)
  if(COOP_CLANG)
    set(probe ${CMAKE_CURRENT_BINARY_DIR}/libfuzzer_probe)
    file(WRITE ${probe}/probe.c
      "#include <stddef.h>\n#include <stdint.h>\n"
      "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
    execute_process(
      COMMAND ${COOP_CLANG} -fsanitize=fuzzer,address,undefined probe.c -o probe
      WORKING_DIRECTORY ${probe} RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
    if(probe_rc EQUAL 0)
      set(coop_libfuzzer ON)
    endif()
  endif()
endif()

if(coop_libfuzzer)
  # Without the runtime (built by gcc, with OpenCL): COOP_FUZZ_RT_STUB
  # answers config_validate's one question about it. inih is the system's
  # shared library, so it is not instrumented: coverage and ASan see our
  # code and inih's calls into it.
  set(fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_config)
  set(fuzz_src ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c ${coop_config_root}/daemon/config.c
    ${coop_config_root}/daemon/log.c)
  add_custom_command(OUTPUT ${fuzz_bin}
    COMMAND ${COOP_CLANG} -std=c11 -D_POSIX_C_SOURCE=200809L -DCOOP_FUZZ_RT_STUB -g -O1
      -fno-omit-frame-pointer -Wall -Wextra -fsanitize=fuzzer,address,undefined
      -fno-sanitize-recover=undefined -I${coop_config_root}/daemon
      -I${coop_config_root}/megakernel -I${coop_config_root}/protocol ${INIH_CFLAGS}
      ${fuzz_src} ${INIH_LDFLAGS} -o ${fuzz_bin}
    DEPENDS ${fuzz_src} ${coop_config_root}/daemon/config.h ${coop_config_root}/daemon/log.h
      ${coop_config_root}/megakernel/coop_rt.h ${coop_config_root}/protocol/coop_errno.h
    COMMENT "Building the libFuzzer target fuzz_config with clang"
    VERBATIM)
  add_custom_target(fuzz_config ALL DEPENDS ${fuzz_bin})

  # Seeds: the standalone binary's, conf/coopd.ini and the regression corpus
  # (read only); libFuzzer writes what it finds to new/, the first directory.
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_config_corpus)
  file(MAKE_DIRECTORY ${corpus}/new ${corpus}/conf)
  configure_file(${coop_config_root}/conf/coopd.ini ${corpus}/conf/coopd.ini COPYONLY)
  add_test(NAME fuzz_config_seeds COMMAND fuzz_config_replay --write-corpus ${corpus}/seeds)
  set_tests_properties(fuzz_config_seeds PROPERTIES FIXTURES_SETUP fuzz_config_corpus)
  add_test(NAME fuzz_config_libfuzzer
    COMMAND ${fuzz_bin} -max_total_time=30 -timeout=10 -print_final_stats=1
      -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz_config- ${corpus}/new ${corpus}/seeds
      ${corpus}/conf ${coop_config_corpus})
  set_tests_properties(fuzz_config_libfuzzer PROPERTIES
    FIXTURES_REQUIRED fuzz_config_corpus TIMEOUT 120)
else()
  message(STATUS "clang with libFuzzer not found: fuzz_config_libfuzzer is not built "
    "(fuzz_config_replay still runs the fuzz target)")
endif()
