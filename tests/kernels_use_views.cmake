# kernels_use_views: every shipped kernel indexes its buffers and scratch
# through bounds-checked views (docs/kernels.md, "The rule"). Fails, naming
# the file and line, on a raw coop_arg_buf( / coop_scratch( or a cast to a
# global or local pointer in kernels/*.cl or kernels/apps/*.cl.
file(GLOB kernels ${SRC}/kernels/*.cl ${SRC}/kernels/apps/*.cl)
list(LENGTH kernels n)
if(n LESS 3)
  message(FATAL_ERROR "no kernels found under ${SRC}")
endif()
set(bad "")
foreach(f ${kernels})
  file(STRINGS ${f} lines)
  set(i 0)
  foreach(l IN LISTS lines)
    math(EXPR i "${i} + 1")
    if(l MATCHES "coop_arg_buf\\(|coop_scratch\\(|\\(COOP_GLOBAL|\\(COOP_LOCAL")
      string(APPEND bad "${f}:${i}: ${l}\n")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "raw buffer access in shipped kernels (use views):\n${bad}")
endif()
message(STATUS "${n} kernels, all through views")
