# The wire codec's tests, included from tests/CMakeLists.txt: the unit tests
# (check), the fuzz target replayed with the project compiler on a built-in
# corpus and its mutations (so every build fuzzes a little, gcc included),
# and, where clang has libFuzzer, a 30-second libFuzzer run on that corpus.

# UBSan only reports and goes on unless told to stop; a test must fail.
set(coop_wire_test_env "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")

add_executable(test_wire test_wire.c)
target_link_libraries(test_wire PRIVATE coopproto PkgConfig::CHECK)
add_test(NAME wire_codec COMMAND test_wire)
set_tests_properties(wire_codec PROPERTIES TIMEOUT 300 ENVIRONMENT "${coop_wire_test_env}")

# About 1 s unsanitized, 10 s with COOP_SANITIZE, on one core.
add_executable(fuzz_wire_replay fuzz_wire.c)
target_compile_definitions(fuzz_wire_replay PRIVATE COOP_FUZZ_STANDALONE)
target_link_libraries(fuzz_wire_replay PRIVATE coopproto)
add_test(NAME fuzz_wire_replay COMMAND fuzz_wire_replay 1000000)
set_tests_properties(fuzz_wire_replay PROPERTIES TIMEOUT 120 ENVIRONMENT "${coop_wire_test_env}")

# libFuzzer needs clang (the project compiler is gcc): probe that
# `clang -fsanitize=fuzzer` links, since Debian ships clang without the
# runtime in some configurations.
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

if(coop_libfuzzer)
  set(fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_wire)
  set(fuzz_src ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_wire.c ${PROJECT_SOURCE_DIR}/protocol/wire.c
    ${PROJECT_SOURCE_DIR}/protocol/errno.c)
  add_custom_command(OUTPUT ${fuzz_bin}
    COMMAND ${COOP_CLANG} -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer
      -Wall -Wextra -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
      -I${PROJECT_SOURCE_DIR}/protocol ${fuzz_src} -o ${fuzz_bin}
    DEPENDS ${fuzz_src} ${PROJECT_SOURCE_DIR}/protocol/wire.h
      ${PROJECT_SOURCE_DIR}/protocol/coop_errno.h
    COMMENT "Building the libFuzzer target fuzz_wire with clang"
    VERBATIM)
  add_custom_target(fuzz_wire ALL DEPENDS ${fuzz_bin})

  # The seeds come from the standalone binary (built with the encoder, so
  # they follow wire.h); libFuzzer writes what it finds to new/ beside them.
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_wire_corpus)
  file(MAKE_DIRECTORY ${corpus}/new)
  add_test(NAME fuzz_wire_seeds COMMAND fuzz_wire_replay --write-corpus ${corpus}/seeds)
  set_tests_properties(fuzz_wire_seeds PROPERTIES FIXTURES_SETUP fuzz_wire_corpus)
  add_test(NAME fuzz_wire_libfuzzer
    COMMAND ${fuzz_bin} -max_total_time=30 -timeout=10 -print_final_stats=1
      -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz_wire- ${corpus}/new ${corpus}/seeds)
  set_tests_properties(fuzz_wire_libfuzzer PROPERTIES
    FIXTURES_REQUIRED fuzz_wire_corpus TIMEOUT 120)
else()
  message(STATUS "clang with libFuzzer not found: fuzz_wire_libfuzzer is not built "
    "(fuzz_wire_replay still runs the fuzz target)")
endif()
