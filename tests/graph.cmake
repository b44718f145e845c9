# Graph inputs (docs/inputs.md): the CSR builder, readers and generators as a
# static library, their unit tests (check), the readers' fuzz target replayed
# with the project compiler on a built-in corpus and its mutations, and,
# where clang has libFuzzer, a 30-second libFuzzer run. Included from
# tests/CMakeLists.txt; paths are relative to this file so that it does not
# depend on where it is included from.

set(coop_graph_root ${CMAKE_CURRENT_LIST_DIR}/..)
set(coop_graph_apps ${coop_graph_root}/apps/graph)

# coopgraph itself is built in apps/graph/CMakeLists.txt.

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

# Where clang has libFuzzer, a 30-second run on the replay's seeds and the
# in-tree example files.
include(${CMAKE_CURRENT_LIST_DIR}/libfuzzer.cmake)
coop_libfuzzer(NAME graph
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_graph.c ${coop_graph_apps}/graph_build.c
    ${coop_graph_apps}/graph_read.c ${coop_graph_apps}/graph_gen.c
    ${coop_graph_root}/protocol/errno.c
  FLAGS -I${coop_graph_apps} -I${coop_graph_root}/protocol
  DEPENDS ${coop_graph_apps}/graph.h ${coop_graph_root}/protocol/coop_errno.h
  SEED_DIRS ${CMAKE_CURRENT_LIST_DIR}/data/graphs)
