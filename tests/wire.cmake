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

# Where clang has libFuzzer, a 30-second run on the replay's seeds.
include(${CMAKE_CURRENT_LIST_DIR}/libfuzzer.cmake)
coop_libfuzzer(NAME wire
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_wire.c ${PROJECT_SOURCE_DIR}/protocol/wire.c
    ${PROJECT_SOURCE_DIR}/protocol/errno.c
  FLAGS -I${PROJECT_SOURCE_DIR}/protocol
  DEPENDS ${PROJECT_SOURCE_DIR}/protocol/wire.h ${PROJECT_SOURCE_DIR}/protocol/coop_errno.h)
