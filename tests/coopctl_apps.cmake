# coopctl app: the applications through coopd. One coopd on
# PoCL with the runtime's and the applications' kernels, `coopctl app NAME
# --check` for every application built (its test input 0, and for the graph
# apps a file of tests/data/graphs), and the error paths (coopctl_apps.sh).
# Labelled device: `scripts/test --backend cuda` runs it through CUDA too.
# app_tasks: every application's task description against the //@coop
# signature of its kernel file, without a device (test_app_tasks.c).
# Included from tests/CMakeLists.txt.
get_property(coop_app_kernel_dir GLOBAL PROPERTY COOP_APP_KERNEL_DIR)
add_test(NAME coopctl_apps
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/coopctl_apps.sh $<TARGET_FILE:coopd>
          $<TARGET_FILE:coopctl> ${PROJECT_SOURCE_DIR}/kernels:${coop_app_kernel_dir}
          ${CMAKE_CURRENT_LIST_DIR}/data/graphs ${COOP_APPS_BUILT})
set_tests_properties(coopctl_apps PROPERTIES ENVIRONMENT "POCL_MAX_PTHREAD_COUNT=4"
  TIMEOUT 300 LABELS device)

add_executable(test_app_tasks ${CMAKE_CURRENT_LIST_DIR}/test_app_tasks.c)
target_link_libraries(test_app_tasks PRIVATE coopapphost PkgConfig::CHECK)
target_compile_definitions(test_app_tasks PRIVATE
  COOP_GRAPH_DATA="${CMAKE_CURRENT_LIST_DIR}/data/graphs")
add_test(NAME app_tasks COMMAND test_app_tasks)
set_tests_properties(app_tasks PROPERTIES TIMEOUT 120)

# coopctl's --device for submit, render and top, through one coopd running
# two megakernels on PoCL's one device (coopctl_devices.sh). Not labelled
# device: on one GPU a second persistent kernel would only time-slice with
# the first, and coopd refuses a repeated index on CUDA.
add_test(NAME coopctl_devices
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/coopctl_devices.sh $<TARGET_FILE:coopd>
          $<TARGET_FILE:coopctl> ${PROJECT_SOURCE_DIR}/kernels)
set_tests_properties(coopctl_devices PROPERTIES ENVIRONMENT "POCL_MAX_PTHREAD_COUNT=4"
  TIMEOUT 300)
