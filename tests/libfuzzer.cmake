# libFuzzer builds of the fuzz targets, shared by wire.cmake, graph.cmake and
# config_fuzz.cmake. libFuzzer needs clang (the project compiler is gcc):
# probe once that `clang -fsanitize=fuzzer` links, since Debian ships clang
# without the runtime in some configurations.
include_guard(GLOBAL)

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

# coop_libfuzzer(NAME SOURCES ... [FLAGS ...] [LIBS ...] [DEPENDS ...] [SEED_DIRS ...])
# Builds fuzz_NAME with clang and the sanitizers, and adds two tests:
# fuzz_NAME_seeds writes the standalone binary's seeds (fuzz_NAME_replay
# --write-corpus, built with the encoder or generators, so they follow the
# code), then fuzz_NAME_libfuzzer runs 12 s on them and on SEED_DIRS (read
# only); libFuzzer writes what it finds to new/, the first directory.
# Without clang's libFuzzer it says so and adds nothing: fuzz_NAME_replay
# still runs the target.
function(coop_libfuzzer)
  cmake_parse_arguments(F "" "NAME" "SOURCES;FLAGS;LIBS;DEPENDS;SEED_DIRS" ${ARGN})
  if(NOT coop_libfuzzer)
    message(STATUS "clang with libFuzzer not found: fuzz_${F_NAME}_libfuzzer is not built "
      "(fuzz_${F_NAME}_replay still runs the fuzz target)")
    return()
  endif()
  set(bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${F_NAME})
  add_custom_command(OUTPUT ${bin}
    COMMAND ${COOP_CLANG} -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer
      -Wall -Wextra -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
      ${F_FLAGS} ${F_SOURCES} ${F_LIBS} -o ${bin}
    DEPENDS ${F_SOURCES} ${F_DEPENDS}
    COMMENT "Building the libFuzzer target fuzz_${F_NAME} with clang"
    VERBATIM)
  add_custom_target(fuzz_${F_NAME} ALL DEPENDS ${bin})

  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${F_NAME}_corpus)
  file(MAKE_DIRECTORY ${corpus}/new)
  add_test(NAME fuzz_${F_NAME}_seeds
    COMMAND fuzz_${F_NAME}_replay --write-corpus ${corpus}/seeds)
  set_tests_properties(fuzz_${F_NAME}_seeds PROPERTIES FIXTURES_SETUP fuzz_${F_NAME}_corpus)
  add_test(NAME fuzz_${F_NAME}_libfuzzer
    COMMAND ${bin} -max_total_time=12 -timeout=10 -print_final_stats=1
      -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz_${F_NAME}- ${corpus}/new ${corpus}/seeds
      ${F_SEED_DIRS})
  set_tests_properties(fuzz_${F_NAME}_libfuzzer PROPERTIES
    FIXTURES_REQUIRED fuzz_${F_NAME}_corpus TIMEOUT 120)
endfunction()
