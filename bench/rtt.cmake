# coop-bench-rtt (rtt.c): the dispatch round trip through coopd. Included
# from the top-level CMakeLists.txt after client/, since it links libcoop.
if(TARGET coop AND TARGET coopbench)
  add_executable(coop-bench-rtt ${CMAKE_CURRENT_LIST_DIR}/rtt.c)
  add_dependencies(coop-bench-rtt coop-bench-commit)
  target_include_directories(coop-bench-rtt PRIVATE ${PROJECT_BINARY_DIR}/bench)
  target_link_libraries(coop-bench-rtt PRIVATE coopbench coop m)
endif()
