# The Python package (python/coop, docs/python.md). python_layout: the
# ctypes structs of python/coop/_capi.py against client/coop.h
# (tests/python/layout.c prints its sizes and offsets). python_client: the
# package against a coopd on PoCL, and each example of examples/python
# briefly (python_client.sh). Both are skipped (status 77) when
# ${Python3_EXECUTABLE} cannot import numpy. Included from tests/CMakeLists.txt.
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
add_executable(python_layout ${CMAKE_CURRENT_LIST_DIR}/python/layout.c)
target_link_libraries(python_layout PRIVATE coop)
add_test(NAME python_layout
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/python/test_layout.py
          $<TARGET_FILE:python_layout> ${PROJECT_SOURCE_DIR}/python)
set_tests_properties(python_layout PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
  ENVIRONMENT "COOP_LIBRARY=$<TARGET_FILE_DIR:coop>/libcoop.so.0;${coop_test_py_env}")
get_property(coop_py_app_kernels GLOBAL PROPERTY COOP_APP_KERNEL_DIR)
add_test(NAME python_client
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/python_client.sh $<TARGET_FILE:coopd>
          ${PROJECT_SOURCE_DIR}/kernels:${coop_py_app_kernels} ${Python3_EXECUTABLE}
          $<TARGET_FILE_DIR:coop>/libcoop.so.0 ${PROJECT_SOURCE_DIR})
set_tests_properties(python_client PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "POCL_MAX_PTHREAD_COUNT=4;${coop_test_py_env}" LABELS device)
