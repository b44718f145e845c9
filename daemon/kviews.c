/* kviews.c: see kviews.h. */
#include "kviews.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"

/* Identifiers refused wherever they stand in code (comments and literals
 * are blanked first), and what to use instead. */
static const struct {
  const char *word, *instead;
} refused[] = {
    {"coop_arg_buf", "a view: coop_arg_buf_u32(c, i) and the like, with coop_at"},
    {"coop_scratch", "a view: coop_scratch_u32(c)"},
    {"COOP_GLOBAL", "views, not pointers into buffers"},
    {"COOP_LOCAL", "views, not pointers into scratch"},
    {"global", "views, not pointers into buffers"},
    {"__global", "views, not pointers into buffers"},
    {"local", "views, not pointers into scratch"},
    {"__local", "views, not pointers into scratch"},
    {"asm", "no inline assembly"},
    {"__asm", "no inline assembly"},
    {"__asm__", "no inline assembly"},
    /* a directive in a macro, or text of a file that coopd's user can read
     * (and that may change between two builds of the same source) */
    {"_Pragma", "no pragmas"},
    {"__has_include", "no includes"},
    {"__has_include_next", "no includes"},
    {"__has_embed", "no includes"},
};

/* The preprocessor directives an author may use. */
static const char *const directives[] = {"define", "undef", "if",   "ifdef",
                                         "ifndef", "elif",  "else", "endif"};

/* The length of a line continuation at s: a backslash, the blanks the
 * compiler lets stand between it and the line's end (with a warning), a
 * carriage return, a newline; 0 where s holds none. */
static size_t continuation(const char *s) {
  if (*s != '\\') return 0;
  size_t l = 1;
  while (s[l] == ' ' || s[l] == '\t' || s[l] == '\f' || s[l] == '\v') l++;
  if (s[l] == '\r') l++;
  return s[l] == '\n' ? l + 1 : 0;
}

static unsigned line_of(const char *t, const char *p) {
  unsigned l = 1;
  for (; t < p; t++) l += *t == '\n';
  return l;
}

/* src with line continuations joined (kept as a newline after the joined
 * line, so line numbers hold). */
static char *joined_text(const char *src) {
  size_t n = strlen(src);
  char *t = malloc(n + 1);
  if (!t) return NULL;
  size_t o = 0, owed = 0;
  for (size_t i = 0; i < n; i++) {
    size_t c = continuation(src + i);
    if (c) {
      i += c - 1, owed++;
      continue;
    }
    t[o++] = src[i];
    if (src[i] == '\n')
      for (; owed; owed--) t[o++] = '\n';
  }
  for (; owed; owed--) t[o++] = '\n';
  t[o] = '\0';
  return t;
}

/* joined_text with comments and literals blanked, as the compiler sees
 * the tokens: a refused name split over two lines is still found. *open:
 * where a block comment the text does not close began, or NULL. */
static char *code_text(const char *src, const char **open) {
  char *t = joined_text(src);
  size_t n = t ? strlen(t) : 0, o = t ? coop_kernel_blank(t, n) : 0;
  if (open) *open = t && o < n ? t + o : NULL;
  return t;
}

/* The line of a backslash with only blanks after it at src's end (the
 * next line, the first of the #undefs kviews_seal appends, would join its
 * last); 0: none. */
static unsigned backslash_at_end(const char *src) {
  size_t n = strlen(src);
  while (n && strchr(" \t\f\v\r", src[n - 1])) n--;
  return n && src[n - 1] == '\\' ? line_of(src, src + n - 1) : 0;
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The directive of the line at p, if it is one (after blanks, a #): its
 * name in *d (length *dl; 0 for the null directive) and the identifier
 * after it in *m (length *ml, 0 where none). 0 where the line holds none. */
static int directive(const char *p, const char **d, size_t *dl, const char **m, size_t *ml) {
  while (*p == ' ' || *p == '\t') p++;
  if (*p != '#') return 0;
  for (p++; *p == ' ' || *p == '\t'; p++) {
  }
  *d = p;
  for (*dl = 0; ident_char(p[*dl]); (*dl)++) {
  }
  for (p += *dl; *p == ' ' || *p == '\t'; p++) {
  }
  *m = p;
  for (*ml = 0; ident_char(p[*ml]); (*ml)++) {
  }
  return 1;
}

static int is(const char *d, size_t dl, const char *word) {
  return strlen(word) == dl && !strncmp(d, word, dl);
}

/* A directive other than those allowed: the name after a line's first #. */
static const char *bad_directive(const char *t, char *name, size_t len) {
  for (const char *p = t; p; p = strchr(p, '\n')) {
    if (*p == '\n') p++;
    const char *d, *m;
    size_t l, ml;
    if (!directive(p, &d, &l, &m, &ml)) continue;
    int ok = l == 0; /* a lone # is the null directive */
    for (size_t i = 0; i < sizeof directives / sizeof *directives && !ok; i++)
      ok = is(d, l, directives[i]);
    if (ok) continue;
    snprintf(name, len, "%.*s", (int)(l < 32 ? l : 32), d);
    return d;
  }
  return NULL;
}

/* A #define or #undef of the text t: the name, where it stands. */
struct macro_use {
  const char *name, *at;
  size_t len;
  int undef;
};

static int by_name_then_place(const void *a, const void *b) {
  const struct macro_use *x = a, *y = b;
  size_t l = x->len < y->len ? x->len : y->len;
  int c = strncmp(x->name, y->name, l);
  if (c || x->len != y->len) return c ? c : x->len < y->len ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

/* Every #define and #undef of t (an array of *n; NULL with *n 0 when
 * there are none or memory ran out: *oom says which), sorted by name,
 * then by place. */
static struct macro_use *macro_uses(const char *t, size_t *n, int *oom) {
  struct macro_use *u = NULL;
  size_t cap = 0;
  *n = 0, *oom = 0;
  for (const char *p = t; p; p = strchr(p, '\n')) {
    if (*p == '\n') p++;
    const char *d, *m;
    size_t dl, ml;
    if (!directive(p, &d, &dl, &m, &ml) || !ml || !(is(d, dl, "define") || is(d, dl, "undef")))
      continue;
    if (*n == cap) {
      struct macro_use *g = realloc(u, (cap = cap ? 2 * cap : 16) * sizeof *u);
      if (!g) return free(u), *n = 0, *oom = 1, NULL;
      u = g;
    }
    u[(*n)++] = (struct macro_use){.name = m, .at = d, .len = ml, .undef = is(d, dl, "undef")};
  }
  if (u) qsort(u, *n, sizeof *u, by_name_then_place);
  return u;
}

static int same_name(const struct macro_use *x, const struct macro_use *y) {
  return x->len == y->len && !strncmp(x->name, y->name, x->len);
}

/* An #undef of a name t did not #define before it (the first of its
 * name, in uses sorted by name and place): an author's kernel could
 * otherwise take a macro away from the runtime's code after it, where a
 * conditional would then take another branch. */
static const struct macro_use *foreign_undef(const struct macro_use *u, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (u[i].undef && (i == 0 || !same_name(&u[i], &u[i - 1]))) return &u[i];
  return NULL;
}

/* A #define or #undef of a name the runtime's device files or the
 * compiler may define before the kernel (COOP_*, coop_*, cl_*, CL_*, or
 * any beginning with an underscore): the #undef kviews_seal appends would
 * take that definition away from the code after the kernel, where an #ifdef
 * then takes the other branch (COOP_SCHED_HELPERS, __CUDA_ARCH__). The
 * first of them, or NULL. */
static const struct macro_use *reserved_name(const struct macro_use *u, size_t n) {
  static const char *const prefix[] = {"COOP_", "coop_", "cl_", "CL_", "_"};
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < sizeof prefix / sizeof *prefix; k++)
      if (u[i].len >= strlen(prefix[k]) && !strncmp(u[i].name, prefix[k], strlen(prefix[k])))
        return &u[i];
  return NULL;
}

/* Conditionals that do not close within t: the runtime's code after an
 * author's kernel would fall inside one (or close it). */
static const char *open_conditional(const char *t, const char **why) {
  int depth = 0;
  const char *first = NULL;
  for (const char *p = t; p; p = strchr(p, '\n')) {
    if (*p == '\n') p++;
    const char *d, *m;
    size_t dl, ml;
    if (!directive(p, &d, &dl, &m, &ml)) continue;
    if (is(d, dl, "if") || is(d, dl, "ifdef") || is(d, dl, "ifndef")) {
      if (depth++ == 0) first = d;
    } else if (is(d, dl, "elif") || is(d, dl, "else") || is(d, dl, "endif")) {
      if (depth == 0) return *why = "without its #if", d;
      depth -= is(d, dl, "endif");
    }
  }
  return depth ? (*why = "not closed by an #endif", first) : NULL;
}

/* What the compiler may read as a line's end, a blank, a # or a backslash
 * where the checks below see none, anywhere in src: a carriage return
 * alone (a new line to the compiler), a form feed or a vertical tab (blanks
 * to the compiler, before or after a directive's #: the line scan, which
 * skips spaces and tabs, saw "\f#include" as no directive), a trigraph for
 * # or a backslash (two question marks, then = or /). */
static const char *hidden_syntax(const char *src, const char **what) {
  for (const char *p = src; *p; p++) {
    if (p[0] == '\r' && p[1] != '\n') return *what = "a carriage return not before a newline", p;
    if (p[0] == '\f' || p[0] == '\v') return *what = "a form feed or a vertical tab", p;
    if (p[0] == '?' && p[1] == '?' && (p[2] == '=' || p[2] == '/')) return *what = "a trigraph", p;
  }
  return NULL;
}

/* A byte of code text t (comments and literals blanked) outside ASCII:
 * a compiler may read some as blanks (Unicode's spaces), which the line
 * scan does not skip. */
static const char *outside_ascii(const char *t) {
  for (; *t; t++)
    if ((unsigned char)*t >= 0x80) return t;
  return NULL;
}

/* The macro rules of t: an #undef only of the kernel's own names, every
 * conditional closed within it. A message's length in why (at *p), 0
 * when both hold. */
static int macro_rules(const char *t, const char **p, char *why, size_t whylen) {
  size_t n;
  int oom;
  struct macro_use *u = macro_uses(t, &n, &oom);
  const struct macro_use *f = foreign_undef(u, n), *res = reserved_name(u, n);
  const char *what;
  int r = 0;
  if (oom) {
    r = snprintf(why, whylen, "out of memory"), *p = t;
  } else if (res) {
    *p = res->at;
    r = snprintf(why, whylen,
                 "#%s %.*s: a kernel added by an author may not define the runtime's or the "
                 "compiler's names (COOP_*, coop_*, cl_*, CL_*, or beginning with _)",
                 res->undef ? "undef" : "define", (int)(res->len < 64 ? res->len : 64), res->name);
  } else if (f) {
    *p = f->at;
    r = snprintf(why, whylen,
                 "#undef %.*s: a kernel added by an author may undefine only the names it "
                 "defines itself (each is undefined after the kernel anyway)",
                 (int)(f->len < 64 ? f->len : 64), f->name);
  } else if ((*p = open_conditional(t, &what))) {
    r = snprintf(why, whylen,
                 "a conditional %s: a kernel added by an author closes each of its own", what);
  }
  free(u);
  return r;
}

int kviews_check(const char *src, unsigned *line, char *why, size_t whylen) {
  const char *what, *open = NULL, *h = hidden_syntax(src, &what);
  char *t = h ? NULL : code_text(src, &open);
  unsigned at = h ? line_of(src, h) : 0;
  /* what would take in the #undefs kviews_seal appends (and, for a
   * comment, the next kernel's lines up to its first comment's end) */
  const char *wide = t ? outside_ascii(t) : NULL;
  if (open)
    at = line_of(t, open), what = "a comment not closed within the kernel";
  else if (wide)
    at = line_of(t, wide), what = "a byte outside ASCII but in a comment or a literal";
  else if (!at && (at = backslash_at_end(src)))
    what = "a backslash at the kernel's end";
  if (at) {
    free(t);
    *line = at;
    snprintf(why, whylen, "%s is not allowed in a kernel added by an author", what);
    return -1;
  }
  if (!t) return snprintf(why, whylen, "out of memory"), -1;
  char name[40];
  const char *p = bad_directive(t, name, sizeof name);
  int r = 0;
  if (p) {
    r = snprintf(why, whylen,
                 "#%s: a kernel added by an author may use only #define, #undef and the "
                 "conditionals (#if, #ifdef, #ifndef, #elif, #else, #endif)",
                 name);
  } else if ((p = strstr(t, "##")) || (p = strstr(t, "%:%:"))) {
    r = snprintf(why, whylen, "token pasting (##) is not allowed in a kernel added by an author");
  } else if ((p = strstr(t, "%:"))) { /* a directive's # the line scan does not see */
    r = snprintf(why, whylen, "the digraph %%: is not allowed in a kernel added by an author");
  } else {
    r = macro_rules(t, &p, why, whylen);
  }
  for (const char *q = t; !r && *q; q++) {
    if (!ident_char(*q) || (q > t && ident_char(q[-1]))) continue;
    size_t l = 0;
    while (ident_char(q[l])) l++;
    for (size_t i = 0; i < sizeof refused / sizeof *refused && !r; i++)
      if (strlen(refused[i].word) == l && !strncmp(q, refused[i].word, l)) {
        p = q;
        r = snprintf(why, whylen,
                     "%s: raw access is refused in a kernel added by an author; use %s",
                     refused[i].word, refused[i].instead);
      }
    q += l - 1;
  }
  if (r) *line = line_of(t, p);
  free(t);
  return r ? -1 : 0;
}

/* The guard of a name the kernel defines first on line at: an #error
 * where the name is defined before the kernel. Only the compiler knows
 * every name it defines (FLT_MAX, M_PI_F, INFINITY beside the prefixes
 * reserved_name refuses): a define of one only warned, and the #undef
 * appended after the kernel then took the compiler's definition from
 * every kernel after it. The #line before it puts the #error on the
 * define's own line (at >= 2: line 1 is the //@coop directive). Its
 * length, written at out (room for cap bytes; 0: only measured). */
static size_t guard(char *out, size_t cap, const struct macro_use *u, unsigned at) {
  int l = (int)u->len;
  return (size_t)snprintf(
      out, cap,
      "#line %u\n#ifdef %.*s\n#error %.*s is defined before this kernel (by the "
      "compiler or the runtime): a kernel added by an author may not define it, "
      "choose another name\n#endif\n",
      at - 1, l, u->name, l, u->name);
}

char *kviews_seal(char *src, int guarded) {
  char *t = src ? code_text(src, NULL) : NULL;
  size_t n = 0, extra = 0, len = src ? strlen(src) : 0;
  int oom = !t;
  struct macro_use *u = t ? macro_uses(t, &n, &oom) : NULL;
  /* line 1 stays first (the //@coop directive); the guards after it, then
   * the numbering taken back to line 2 */
  size_t first = src ? strcspn(src, "\n") : 0;
  if (first < len) first++;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || !same_name(&u[i], &u[i - 1]))
      extra += sizeof "#undef \n" + u[i].len +
               (guarded ? guard(NULL, 0, &u[i], line_of(t, u[i].at)) : 0);
  extra += sizeof "#line 2\n";
  size_t cap = len + 1 + extra + 1;
  char *out = oom ? NULL : malloc(cap);
  if (out) {
    memcpy(out, src, first);
    size_t o = first;
    for (size_t i = 0; guarded && i < n; i++)
      if (i == 0 || !same_name(&u[i], &u[i - 1]))
        o += guard(out + o, cap - o, &u[i], line_of(t, u[i].at));
    if (guarded && n) o += (size_t)sprintf(out + o, "#line 2\n");
    memcpy(out + o, src + first, len - first);
    o += len - first;
    out[o++] = '\n'; /* a last line without its newline */
    for (size_t i = 0; i < n; i++)
      if (i == 0 || !same_name(&u[i], &u[i - 1]))
        o += (size_t)sprintf(out + o, "#undef %.*s\n", (int)u[i].len, u[i].name);
    out[o] = '\0';
  }
  free(src);
  free(u);
  free(t);
  return out;
}
