# coop-bench-rtt (rtt.c): the dispatch round trip through coopd. Included
# from the top-level CMakeLists.txt after client/, since it links libcoop.
if(TARGET coop AND TARGET coopbench)
  add_executable(coop-bench-rtt ${CMAKE_CURRENT_LIST_DIR}/rtt.c)
  add_dependencies(coop-bench-rtt coop-bench-commit)
  target_include_directories(coop-bench-rtt PRIVATE ${PROJECT_BINARY_DIR}/bench)
  target_link_libraries(coop-bench-rtt PRIVATE coopbench coop m)
endif()

# coop-bench-encode (encode.c): libcoop's encoding of a frame client's
# SUBMIT against its kept frame; it calls libcoop's internal
# coop__encode_request, so it links the archive (codec included) and
# reads client/coop_internal.h.
if(TARGET coop_static AND TARGET coopbench)
  add_executable(coop-bench-encode ${CMAKE_CURRENT_LIST_DIR}/encode.c)
  add_dependencies(coop-bench-encode coop-bench-commit)
  target_include_directories(coop-bench-encode PRIVATE ${PROJECT_BINARY_DIR}/bench
                             ${PROJECT_SOURCE_DIR}/client)
  target_link_libraries(coop-bench-encode PRIVATE coop_static coopbench m)
endif()

# coop-bench-frames (frames.c): a frame client through coopd, alone and
# beside bfs that another client keeps running (device buffers both).
if(TARGET coop AND TARGET coopbench AND TARGET coopapphost)
  add_executable(coop-bench-frames ${CMAKE_CURRENT_LIST_DIR}/frames.c
                 ${CMAKE_CURRENT_LIST_DIR}/coopd_jobs.c ${CMAKE_CURRENT_LIST_DIR}/coopd_proc.c)
  add_dependencies(coop-bench-frames coop-bench-commit)
  target_include_directories(coop-bench-frames PRIVATE ${PROJECT_BINARY_DIR}/bench
                             ${PROJECT_SOURCE_DIR}/apps)
  target_link_libraries(coop-bench-frames PRIVATE coopbench coop coopapphost Threads::Threads m)
endif()

# coop-bench-side's setup (g), a frame client through coopd (libcoop), with
# what it shares with coop-bench-frames; a build without libcoop
# (COOP_RUNTIME_ONLY) never includes this file and skips the setup.
if(TARGET coop AND TARGET coop-bench-side)
  target_sources(coop-bench-side PRIVATE ${CMAKE_CURRENT_LIST_DIR}/side_setup_coopd.c
                 ${CMAKE_CURRENT_LIST_DIR}/coopd_jobs.c ${CMAKE_CURRENT_LIST_DIR}/coopd_proc.c)
  target_compile_definitions(coop-bench-side PRIVATE COOP_SIDE_COOPD=1)
  target_link_libraries(coop-bench-side PRIVATE coop)
  add_dependencies(coop-bench-side coopd) # the daemon it starts, beside it in bin/
endif()

# coop-bench-bufcopy (bufcopy.c): large device-buffer copies through coopd,
# and a frame client beside them.
if(TARGET coop AND TARGET coopbench)
  add_executable(coop-bench-bufcopy ${CMAKE_CURRENT_LIST_DIR}/bufcopy.c)
  add_dependencies(coop-bench-bufcopy coop-bench-commit)
  target_include_directories(coop-bench-bufcopy PRIVATE ${PROJECT_BINARY_DIR}/bench)
  target_link_libraries(coop-bench-bufcopy PRIVATE coopbench coop Threads::Threads m)
endif()
