/*
 * kernel_check.h: what can be checked of a kernel's source before a
 * compiler sees it. The runtime's glue (source.c, put_runner) calls
 * NAME_init and NAME_step over a struct NAME_state, or NAME itself; a
 * kernel that lacks one of them would fail to compile in that glue, and
 * the compiler would name a line of the generated source, not the
 * author's. So coopd (daemon/kset.c) checks each file as it loads it, and
 * coop_rt_build each registered kernel, and report the kernel's own file.
 */
#ifndef COOP_KERNEL_CHECK_H
#define COOP_KERNEL_CHECK_H

#include <stddef.h>

/* 0 when src defines what a kernel `name` of its kind needs; else -1 with
 * what is missing in why (which names neither file nor line: the caller
 * gives the kernel's file and the line that declares its kind). */
int coop_kernel_check(const char *name, int cooperative, const char *src, char *why, size_t whylen);
/* 0 when every argument accessor of src (coop_arg_u32(c, 2),
 * coop_arg_buf_f32(c, 0), ...) whose index is a literal names an argument
 * the directive declares (types[i]: "u32", ..., "buf", "buf<f32>"; nargs
 * of them) of the accessor's type, and a typed buffer view
 * (coop_arg_buf_f32) of a buffer declared with an element type reads that
 * type; else -1 with the first that does not in why and
 * its line (1-based) in *line. It compiled, and read another argument's
 * bits or failed EFAULT at run time, its message about the job's data. */
int coop_kernel_check_args(const char *src, const char *const *types, unsigned nargs,
                           unsigned *line, char *why, size_t whylen);
/* A function a kernel's source defines at file scope: its name and the
 * line of its name (1-based, as a #line in the source numbers it). */
#define COOP_KERNEL_DEF_NAME 128
struct coop_kernel_def {
  char name[COOP_KERNEL_DEF_NAME];
  unsigned line;
};
/* The most functions one kernel's source may define at file scope: their
 * list is kept while the kernel is loaded (132 bytes each), and an
 * author's 256 KiB source of tiny functions held about 50000 of them, 6.6
 * MB a kernel, 100 MB for an author's 16. */
#define COOP_KERNEL_MAX_DEFS 4096
/* The functions src defines at file scope (a name, its parameter list and
 * a `{`, outside comments, strings and preprocessor lines), in source
 * order, into *defs (free() it; NULL when none): their count; -1 out of
 * memory; or -2 past COOP_KERNEL_MAX_DEFS, *defs then holding the first
 * function past it alone. Every kernel builds into one program, so a helper of one
 * kernel's name defined by another fails the build; the compiler names
 * the later definition, which is another kernel's file when the newcomer
 * sorts first, and the generated source's where the runtime's code
 * after the kernels defines it. coopd checks with these first and names
 * the newcomer's line (daemon/kset.c). */
int coop_kernel_defs(const char *src, struct coop_kernel_def **defs);
/* Whether the runtime's device code, or the glue it generates around the
 * kernels (coop__run_N, coop__dispatch, coop__kernel_is_coop), defines a
 * function `name`. */
int coop_kernel_runtime_defines(const char *name);
/* defs[0..n) in order of name, then line (coop_kernel_def_find's order). */
void coop_kernel_defs_sort(struct coop_kernel_def *defs, size_t n);
/* The first of sorted defs[0..n) named name (its smallest line), or NULL:
 * a lookup in a kernel's list costs log n, where a scan of every other
 * kernel's list for each of a newcomer's names grew as their product (an
 * author's 256 KiB source holds tens of thousands of definitions). */
const struct coop_kernel_def *coop_kernel_def_find(const struct coop_kernel_def *defs, size_t n,
                                                   const char *name);
/* t's comments and string and character literals (n bytes, NUL after)
 * turned into spaces, newlines kept: what is left is code, at the same
 * lines and columns. Returns where a block comment that t does not close
 * began, or n. */
size_t coop_kernel_blank(char *t, size_t n);

#endif /* COOP_KERNEL_CHECK_H */
