/* kernel_check.c: see kernel_check.h. */
#include "kernel_check.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t coop_kernel_blank(char *t, size_t n) {
  size_t open = n;
  for (size_t i = 0; i < n; i++) {
    if (t[i] == '/' && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') t[i++] = ' ';
    } else if (t[i] == '/' && t[i + 1] == '*') {
      open = i;
      t[i] = t[i + 1] = ' ';
      for (i += 2; i < n && !(t[i] == '*' && t[i + 1] == '/'); i++)
        if (t[i] != '\n') t[i] = ' ';
      if (i < n) t[i] = t[i + 1] = ' ', i++, open = n;
    } else if (t[i] == '"' || t[i] == '\'') {
      char q = t[i];
      for (t[i++] = ' '; i < n && t[i] != q && t[i] != '\n'; i++) {
        if (t[i] == '\\' && i + 1 < n) t[i++] = ' ';
        t[i] = ' ';
      }
      if (i < n && t[i] == q) t[i] = ' ';
    }
  }
  return open;
}

/* src with its comments, string and character literals blanked (newlines
 * kept), so that a name in a comment does not count as a definition. */
static char *code_only(const char *src) {
  size_t n = strlen(src);
  char *t = malloc(n + 1);
  if (!t) return NULL;
  memcpy(t, src, n + 1);
  coop_kernel_blank(t, n);
  return t;
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static const char *skip_space(const char *p) {
  while (isspace((unsigned char)*p)) p++;
  return p;
}

/* For each '(' of t (n bytes), the offset of the ')' that closes it, or
 * SIZE_MAX: one pass with a stack, so that a source of many unclosed '('
 * costs no scan to its end per '(' (an author's source is checked on
 * coopd's loop, and 64 KiB of "a(" took it 1.3 s). NULL: no memory. */
static size_t *closing_parens(const char *t, size_t n) {
  size_t *close = malloc((n + 1) * sizeof *close), *open = malloc((n + 1) * sizeof *open);
  size_t depth = 0;
  for (size_t i = 0; close && open && i < n; i++) {
    close[i] = SIZE_MAX;
    if (t[i] == '(') open[depth++] = i;
    if (t[i] == ')' && depth) close[open[--depth]] = i;
  }
  int ok = close && open;
  free(open);
  if (!ok) free(close);
  return ok ? close : NULL;
}

/* Whether t has `word` as a whole identifier followed by `(`...`)` and `{`:
 * a function definition (a declaration or a call is not one). close:
 * closing_parens(t). */
static int defines_function(const char *t, const size_t *close, const char *word) {
  size_t wl = strlen(word);
  for (const char *p = strstr(t, word); p; p = strstr(p + 1, word)) {
    if ((p > t && ident_char(p[-1])) || ident_char(p[wl])) continue;
    const char *q = skip_space(p + wl);
    if (*q != '(' || close[q - t] == SIZE_MAX) continue;
    if (*skip_space(t + close[q - t] + 1) == '{') return 1;
  }
  return 0;
}

/* Whether t has `struct tag {`. */
static int defines_struct(const char *t, const char *tag) {
  size_t tl = strlen(tag);
  for (const char *p = strstr(t, "struct"); p; p = strstr(p + 1, "struct")) {
    if ((p > t && ident_char(p[-1])) || ident_char(p[6])) continue;
    const char *q = skip_space(p + 6);
    if (strncmp(q, tag, tl) || ident_char(q[tl])) continue;
    if (*skip_space(q + tl) == '{') return 1;
  }
  return 0;
}

int coop_kernel_check(const char *name, int cooperative, const char *src, char *why,
                      size_t whylen) {
  char *t = code_only(src);
  size_t *close = t ? closing_parens(t, strlen(t)) : NULL;
  if (!close) {
    free(t);
    return snprintf(why, whylen, "out of memory"), -1;
  }
  char step[96], init[96], state[96];
  snprintf(step, sizeof step, "%s_step", name);
  snprintf(init, sizeof init, "%s_init", name);
  snprintf(state, sizeof state, "%s_state", name);
  int r = 0;
  if (cooperative) {
    const char *hint = defines_function(t, close, name) && !defines_function(t, close, step)
                           ? " (it defines a function named like the kernel: kind=noncooperative?)"
                           : "";
    if (!defines_struct(t, state))
      r = snprintf(why, whylen,
                   "cooperative kernel \"%s\" defines no struct %s { ... } (its transmitted "
                   "state)%s",
                   name, state, hint);
    else if (!defines_function(t, close, init))
      r = snprintf(why, whylen,
                   "cooperative kernel \"%s\" defines no %s: void %s(struct coop_ctx *c, "
                   "struct %s *s) { ... }%s",
                   name, init, init, state, hint);
    else if (!defines_function(t, close, step))
      r = snprintf(why, whylen,
                   "cooperative kernel \"%s\" defines no %s: coop_u32 %s(struct coop_ctx *c, "
                   "struct %s *s) { ... }%s",
                   name, step, step, state, hint);
  } else if (!defines_function(t, close, name)) {
    r = snprintf(
        why, whylen,
        "noncooperative kernel \"%s\" defines no %s: void %s(struct coop_ctx *c) { ... }%s", name,
        name, name,
        defines_function(t, close, step) ? " (it defines a step: kind=cooperative?)" : "");
  }
  free(close);
  free(t);
  return r ? -1 : 0;
}

/* The accessors of kernel arguments (api.h) and the type of the argument
 * each reads: a buffer's (coop_arg_buf, coop_arg_buf_u32, ...) or a
 * scalar's of its own name. */
static const char *accessor_type(const char *p, size_t l) {
  static const char *const scalars[] = {"u32", "i32", "u64", "i64", "f32", "f64"};
  if (l < 9 || strncmp(p, "coop_arg_", 9)) return NULL;
  p += 9, l -= 9;
  if (l >= 3 && !strncmp(p, "buf", 3) && (l == 3 || p[3] == '_')) return "buf";
  for (size_t i = 0; i < sizeof scalars / sizeof *scalars; i++)
    if (l == 3 && !strncmp(p, scalars[i], 3)) return scalars[i];
  return NULL;
}

/* The element type a typed buffer accessor reads ("f32" for
 * coop_arg_buf_f32, "u32" for the atomic u32 view), "" for coop_arg_buf;
 * p, l: the accessor's name. */
static const char *accessor_elem(const char *p, size_t l) {
  static const char *const views[][2] = {{"coop_arg_buf_u32", "u32"},
                                         {"coop_arg_buf_i32", "i32"},
                                         {"coop_arg_buf_f32", "f32"},
                                         {"coop_arg_buf_u64", "u64"},
                                         {"coop_arg_buf_atomic_u32", "u32"}};
  for (size_t i = 0; i < sizeof views / sizeof *views; i++)
    if (strlen(views[i][0]) == l && !strncmp(p, views[i][0], l)) return views[i][1];
  return "";
}

/* Whether the directive's type decl ("u32", "buf", "buf<f32>") is what an
 * accessor of type want ("u32", "buf") and element elem reads: a buffer
 * declared with an element type read through a view of another is not. */
static int decl_fits(const char *decl, const char *want, const char *elem) {
  size_t base = strcspn(decl, "<");
  if (strlen(want) != base || strncmp(decl, want, base)) return 0;
  if (!decl[base] || !*elem) return 1;
  return strlen(elem) == strlen(decl + base) - 2 && !strncmp(decl + base + 1, elem, strlen(elem));
}

static unsigned line_at(const char *t, const char *p) {
  unsigned l = 1;
  for (; t < p; t++) l += *t == '\n';
  return l;
}

int coop_kernel_check_args(const char *src, const char *const *types, unsigned nargs,
                           unsigned *line, char *why, size_t whylen) {
  char *t = code_only(src);
  size_t n = t ? strlen(t) : 0, *close = t ? closing_parens(t, n) : NULL;
  if (!close) {
    free(t);
    return snprintf(why, whylen, "out of memory"), -1;
  }
  int r = 0;
  for (const char *p = strstr(t, "coop_arg_"); p && !r; p = strstr(p + 1, "coop_arg_")) {
    if (p > t && ident_char(p[-1])) continue;
    size_t l = 0;
    while (ident_char(p[l])) l++;
    const char *want = accessor_type(p, l), *open = skip_space(p + l);
    if (!want || *open != '(' || close[open - t] == SIZE_MAX) continue;
    const char *end = t + close[open - t], *comma = open + 1;
    for (int depth = 0; comma < end && (depth || *comma != ','); comma++)
      depth += (*comma == '(') - (*comma == ')');
    if (comma >= end) continue;
    /* the index, where it is a literal (an expression is the compiler's) */
    const char *q = skip_space(comma + 1);
    if (!isdigit((unsigned char)*q)) continue;
    char *after;
    unsigned long i = strtoul(q, &after, 0);
    if (*after == 'u' || *after == 'U') after++;
    if (skip_space(after) != end) continue;
    if (i >= nargs)
      r = snprintf(why, whylen,
                   "%.*s(..., %lu): the directive's args= declares %u argument%s (0..%d)", (int)l,
                   p, i, nargs, nargs == 1 ? "" : "s", (int)nargs - 1);
    else if (!decl_fits(types[i], want, accessor_elem(p, l)))
      r = snprintf(why, whylen, "%.*s(..., %lu): argument %lu is %s in the directive, not %s%s%s%s",
                   (int)l, p, i, i, types[i], want, *accessor_elem(p, l) ? "<" : "",
                   accessor_elem(p, l), *accessor_elem(p, l) ? ">" : "");
    if (r) *line = line_at(t, p);
  }
  free(close);
  free(t);
  return r ? -1 : 0;
}

/* The end of the preprocessor line that starts at t[i] (its newline, or
 * n), its continued lines with it; *cont: how many newlines it continued
 * over. */
static size_t directive_end(const char *t, size_t n, size_t i, unsigned *cont) {
  *cont = 0;
  for (; i < n && t[i] != '\n'; i++)
    if (t[i] == '\\' && t[i + 1] == '\n') i++, (*cont)++;
  return i;
}

int coop_kernel_defs(const char *src, struct coop_kernel_def **defs) {
  char *t = code_only(src);
  size_t n = t ? strlen(t) : 0, *close = t ? closing_parens(t, n) : NULL;
  struct coop_kernel_def *d = NULL;
  size_t nd = 0, cap = 0;
  int oom = !close, past = 0;
  unsigned line = 1, depth = 0;
  *defs = NULL;
  for (size_t i = 0; !oom && i < n; i++) {
    if (i == 0 || t[i - 1] == '\n') { /* a preprocessor line is no code: its #line numbers */
      const char *p = t + i;
      while (*p == ' ' || *p == '\t') p++;
      if (*p == '#') {
        for (p++; *p == ' ' || *p == '\t'; p++) {
        }
        unsigned cont, next = 0;
        if (!strncmp(p, "line", 4) && !ident_char(p[4])) next = (unsigned)strtoul(p + 4, NULL, 10);
        size_t end = directive_end(t, n, i, &cont);
        line = next ? next - 1 : line + cont; /* the newline at end counts one */
        if (end >= n) break;
        i = end;
        line++;
        continue;
      }
    }
    char ch = t[i];
    if (ch == '\n') line++;
    if (ch == '{') depth++;
    if (ch == '}' && depth) depth--;
    if (depth || !ident_char(ch) || isdigit((unsigned char)ch) || (i && ident_char(t[i - 1])))
      continue;
    size_t l = 0;
    while (ident_char(t[i + l])) l++;
    const char *q = skip_space(t + i + l);
    /* __attribute__((...)) { after a parameter list is no function */
    if (*q != '(' || close[q - t] == SIZE_MAX || *skip_space(t + close[q - t] + 1) != '{' ||
        l >= COOP_KERNEL_DEF_NAME || !strncmp(t + i, "__", 2))
      continue;
    if (nd == COOP_KERNEL_MAX_DEFS) { /* that one alone, for its line */
      nd = 0;
      past = 1;
    }
    if (nd == cap) {
      struct coop_kernel_def *nn = realloc(d, (cap = cap ? 2 * cap : 16) * sizeof *nn);
      if (!nn) {
        oom = 1;
        break;
      }
      d = nn;
    }
    memcpy(d[nd].name, t + i, l);
    d[nd].name[l] = '\0';
    d[nd++].line = line;
    if (past) break;
  }
  free(close);
  free(t);
  if (oom) {
    free(d);
    return -1;
  }
  /* kept while the kernel is loaded: no doubling's slack */
  struct coop_kernel_def *fit = nd && nd < cap ? realloc(d, nd * sizeof *d) : NULL;
  *defs = fit ? fit : d;
  return past ? -2 : (int)nd;
}

static int def_cmp(const void *a, const void *b) {
  const struct coop_kernel_def *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->line > y->line) - (x->line < y->line);
}

void coop_kernel_defs_sort(struct coop_kernel_def *defs, size_t n) {
  if (n > 1) qsort(defs, n, sizeof *defs, def_cmp);
}

const struct coop_kernel_def *coop_kernel_def_find(const struct coop_kernel_def *defs, size_t n,
                                                   const char *name) {
  size_t lo = 0, hi = n; /* the first at or after name */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(defs[mid].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && !strcmp(defs[lo].name, name) ? &defs[lo] : NULL;
}

/* The runtime's device files (embedded by cmake/embed.cmake, in the
 * order source.c assembles them) and the functions they define, read
 * once. */
extern const char *const coop__device_names[], *const coop__device_texts[];
static struct coop_kernel_def *rt_defs;
static size_t rt_ndefs;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;

static void read_rt_defs(void) {
  for (int i = 0; coop__device_names[i]; i++) {
    struct coop_kernel_def *d;
    int k = coop_kernel_defs(coop__device_texts[i], &d);
    struct coop_kernel_def *all =
        k > 0 ? realloc(rt_defs, (rt_ndefs + (size_t)k) * sizeof *all) : NULL;
    if (all) {
      memcpy(all + rt_ndefs, d, (size_t)k * sizeof *d);
      rt_defs = all, rt_ndefs += (size_t)k;
    }
    if (k > 0 || k == -2) free(d);
  }
  coop_kernel_defs_sort(rt_defs, rt_ndefs);
}

int coop_kernel_runtime_defines(const char *name) {
  if (!strcmp(name, "coop__dispatch") || !strcmp(name, "coop__kernel_is_coop")) return 1;
  if (!strncmp(name, "coop__run_", 10) && isdigit((unsigned char)name[10])) return 1;
  pthread_once(&rt_once, read_rt_defs);
  return coop_kernel_def_find(rt_defs, rt_ndefs, name) != NULL;
}
