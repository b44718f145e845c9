# Regression corpora of the wire and graph fuzz targets: every file in
# tests/data/wire_corpus and tests/data/graph_corpus (scripts/fuzz copies
# libFuzzer's crash inputs there) replayed once through the target with the
# project compiler, so a crash found once fails ctest until it is fixed, in
# every build (sanitized or not, and under scripts/valgrind). The config
# target replays tests/data/config_corpus itself (config_fuzz.cmake).
# Included from tests/CMakeLists.txt after wire.cmake and graph.cmake (for
# coopproto and coopgraph); paths are relative to this file. Well under 1 s.

set(coop_regress_env "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")

add_executable(fuzz_wire_regress ${CMAKE_CURRENT_LIST_DIR}/fuzz_wire.c
  ${CMAKE_CURRENT_LIST_DIR}/fuzz_replay.c)
target_link_libraries(fuzz_wire_regress PRIVATE coopproto)
add_test(NAME fuzz_wire_regress
  COMMAND fuzz_wire_regress ${CMAKE_CURRENT_LIST_DIR}/data/wire_corpus)
set_tests_properties(fuzz_wire_regress PROPERTIES TIMEOUT 60 ENVIRONMENT "${coop_regress_env}")

add_executable(fuzz_graph_regress ${CMAKE_CURRENT_LIST_DIR}/fuzz_graph.c
  ${CMAKE_CURRENT_LIST_DIR}/fuzz_replay.c)
target_link_libraries(fuzz_graph_regress PRIVATE coopgraph)
add_test(NAME fuzz_graph_regress
  COMMAND fuzz_graph_regress ${CMAKE_CURRENT_LIST_DIR}/data/graph_corpus)
set_tests_properties(fuzz_graph_regress PROPERTIES TIMEOUT 60 ENVIRONMENT "${coop_regress_env}")
