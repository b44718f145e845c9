# fuzz_kernels: every shipped kernel (a //@coop first line in
# kernels/ or kernels/apps/) in one megakernel under hostile
# submissions: random and adversarial buffer sizes, contents and scalars,
# with victim buffers between the fuzzed ones. Fails when a victim changes or
# a guard zone is overwritten (coop_rt_free != 0). Tasks are classified by
# coopd's admission rules (daemon/require.c, compiled in). Labelled device:
# `scripts/test --backend cuda` runs it through CUDA. Longer runs:
# fuzz_kernels --seconds N; --extra-kernels DIR runs other versions of the
# kernels (same name: replaced), e.g. one that indexes without views.
add_executable(fuzz_kernels fuzz_kernels.c ${PROJECT_SOURCE_DIR}/daemon/require.c)
target_include_directories(fuzz_kernels PRIVATE ${PROJECT_SOURCE_DIR}/daemon)
target_link_libraries(fuzz_kernels PRIVATE coopapps cooprt coopproto)
target_compile_definitions(fuzz_kernels PRIVATE COOP_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_test(NAME fuzz_kernels COMMAND fuzz_kernels)
set_tests_properties(fuzz_kernels PROPERTIES
  ENVIRONMENT "POCL_MAX_PTHREAD_COUNT=3" TIMEOUT 300 LABELS device)
