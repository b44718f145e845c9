# coop-soak (soak.c): many libcoop clients against a real coopd for a
# bounded time, with the invariants checked at the end. ctest runs 40 s
# (soak_short, labelled device so that `scripts/test --backend cuda` runs
# it too: about 3000 jobs on PoCL with 2 cores, enough for a leak of a
# job's buffers to pass the memory bound); the ten-minute run is a bench
# target (bench/README.md).
# Included from tests/CMakeLists.txt.
add_executable(coop-soak soak.c)
target_link_libraries(coop-soak PRIVATE coop Threads::Threads)
target_compile_definitions(coop-soak PRIVATE COOPD_PATH="$<TARGET_FILE:coopd>"
  KERNEL_DIR="${PROJECT_SOURCE_DIR}/kernels")
add_dependencies(coop-soak coopd)

add_test(NAME soak_short COMMAND coop-soak --seconds 40)
set_tests_properties(soak_short PROPERTIES ENVIRONMENT "POCL_MAX_PTHREAD_COUNT=3"
  TIMEOUT 240 LABELS device)
