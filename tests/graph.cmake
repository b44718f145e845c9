# Graph inputs (issue 4): the CSR builder, readers and generators as a
# static library, their unit tests (check), the readers' fuzz target replayed
# with the project compiler on a built-in corpus and its mutations, and,
# where clang has libFuzzer, a 30-second libFuzzer run. Included from
# tests/CMakeLists.txt; paths are relative to this file so that it does not
# depend on where it is included from.

set(coop_graph_root ${CMAKE_CURRENT_LIST_DIR}/..)
set(coop_graph_apps ${coop_graph_root}/megakernel/apps)

# coopgraph itself is built in megakernel/apps/CMakeLists.txt.

# UBSan only reports and goes on unless told to stop; a test must fail.
set(coop_graph_test_env "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")

# About 1 s unsanitized (200k mutations included), a few s with COOP_SANITIZE.
add_executable(test_graph ${CMAKE_CURRENT_LIST_DIR}/test_graph.c)
target_compile_definitions(test_graph PRIVATE
  COOP_GRAPH_DATA="${CMAKE_CURRENT_LIST_DIR}/data/graphs")
target_link_libraries(test_graph PRIVATE coopgraph PkgConfig::CHECK)
add_test(NAME graph_inputs COMMAND test_graph)
set_tests_properties(graph_inputs PROPERTIES TIMEOUT 300 ENVIRONMENT "${coop_graph_test_env}")

# Each input is read four times (auto and each format).
add_executable(fuzz_graph_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz_graph.c)
target_compile_definitions(fuzz_graph_replay PRIVATE COOP_FUZZ_STANDALONE)
target_link_libraries(fuzz_graph_replay PRIVATE coopgraph)
add_test(NAME fuzz_graph_replay COMMAND fuzz_graph_replay 200000)
set_tests_properties(fuzz_graph_replay PROPERTIES TIMEOUT 120
  ENVIRONMENT "${coop_graph_test_env}")

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
  set(fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_graph)
  set(fuzz_src ${CMAKE_CURRENT_LIST_DIR}/fuzz_graph.c ${coop_graph_apps}/graph_build.c
    ${coop_graph_apps}/graph_read.c ${coop_graph_apps}/graph_gen.c
    ${coop_graph_root}/protocol/errno.c)
  add_custom_command(OUTPUT ${fuzz_bin}
    COMMAND ${COOP_CLANG} -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer
      -Wall -Wextra -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
      -I${coop_graph_apps} -I${coop_graph_root}/protocol ${fuzz_src} -o ${fuzz_bin}
    DEPENDS ${fuzz_src} ${coop_graph_apps}/graph.h ${coop_graph_root}/protocol/coop_errno.h
    COMMENT "Building the libFuzzer target fuzz_graph with clang"
    VERBATIM)
  add_custom_target(fuzz_graph ALL DEPENDS ${fuzz_bin})

  # Seeds: the standalone binary's corpus and the in-tree example files (read
  # only); libFuzzer writes what it finds to new/, the first directory.
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_graph_corpus)
  file(MAKE_DIRECTORY ${corpus}/new)
  add_test(NAME fuzz_graph_seeds COMMAND fuzz_graph_replay --write-corpus ${corpus}/seeds)
  set_tests_properties(fuzz_graph_seeds PROPERTIES FIXTURES_SETUP fuzz_graph_corpus)
  add_test(NAME fuzz_graph_libfuzzer
    COMMAND ${fuzz_bin} -max_total_time=30 -timeout=10 -print_final_stats=1
      -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz_graph- ${corpus}/new ${corpus}/seeds
      ${CMAKE_CURRENT_LIST_DIR}/data/graphs)
  set_tests_properties(fuzz_graph_libfuzzer PROPERTIES
    FIXTURES_REQUIRED fuzz_graph_corpus TIMEOUT 120)
else()
  message(STATUS "clang with libFuzzer not found: fuzz_graph_libfuzzer is not built "
    "(fuzz_graph_replay still runs the fuzz target)")
endif()
