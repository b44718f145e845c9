/*
 * kviews.h: the rule every shipped kernel is held to by the test
 * kernels_use_views (docs/kernels.md, "The rule: index buffers only
 * through views"), applied by coopd itself to the kernels authors add:
 * no raw coop_arg_buf( or coop_scratch(, no cast to a COOP_GLOBAL or
 * COOP_LOCAL pointer. An author's source is compiled by coopd and its log
 * sent back to the author, so what would only be careless in a shipped
 * kernel is refused too: an #include (the log would show the file's
 * lines), any preprocessor directive but the conditionals, #define and
 * #undef (#pragma, #line), token pasting (## or %:%:, which could build
 * a refused name from pieces), the address-space keywords that make a
 * raw pointer without the macros (global, local, __global, __local) and
 * inline assembly; and its macros end with it: an #undef only of a name
 * it defines, every conditional and comment closed, no backslash at its
 * end, every name it defines undefined after it (kviews_seal). A textual check: views, guard zones
 * and the device process remain the guarantee (docs/faults.md).
 */
#ifndef COOPD_KVIEWS_H
#define COOPD_KVIEWS_H

#include <stddef.h>

/* 0 when src keeps the rule; else -1 with *line (1-based) and why. */
int kviews_check(const char *src, unsigned *line, char *why, size_t whylen);

/* src (taken) with an #undef of every name it #defines appended, so that
 * none of an author's macros reaches the kernels and the runtime's code
 * compiled after it, and, where guarded (an author's kernel), after its
 * first line an #error for each such name already defined before it (by
 * the compiler: the #undef would take that definition away); docs/
 * kernels.md, "Adding a kernel without root". A shipped kernel is sealed
 * unguarded, so that its names (BFS_UNREACHED) do not reach the authors'
 * kernels after it, where the guard took them for the compiler's. NULL
 * when memory ran out (src freed). */
char *kviews_seal(char *src, int guarded);

#endif /* COOPD_KVIEWS_H */
