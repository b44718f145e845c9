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

/* src with line continuations joined (kept as a newline after the joined
 * line, so line numbers hold) and comments and literals blanked, as the
 * compiler sees the tokens: a refused name split over two lines is still
 * found. */
static char *code_text(const char *src) {
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
  coop_kernel_blank(t, o);
  return t;
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static unsigned line_of(const char *t, const char *p) {
  unsigned l = 1;
  for (; t < p; t++) l += *t == '\n';
  return l;
}

/* A directive other than those allowed: the name after a line's first #. */
static const char *bad_directive(const char *t, char *name, size_t len) {
  for (const char *p = t; p; p = strchr(p, '\n')) {
    if (*p == '\n') p++;
    const char *q = p;
    while (*q == ' ' || *q == '\t') q++;
    if (*q != '#') continue;
    q++;
    while (*q == ' ' || *q == '\t') q++;
    size_t l = 0;
    while (ident_char(q[l])) l++;
    int ok = l == 0; /* a lone # is the null directive */
    for (size_t i = 0; i < sizeof directives / sizeof *directives && !ok; i++)
      ok = strlen(directives[i]) == l && !strncmp(q, directives[i], l);
    if (ok) continue;
    snprintf(name, len, "%.*s", (int)(l < 32 ? l : 32), q);
    return q;
  }
  return NULL;
}

/* What the compiler may read as a line's end, a # or a backslash where
 * the checks below see none, anywhere in src: a carriage return alone (a
 * new line to the compiler), a trigraph for # or a backslash (two
 * question marks, then = or /). */
static const char *hidden_syntax(const char *src, const char **what) {
  for (const char *p = src; *p; p++) {
    if (p[0] == '\r' && p[1] != '\n') return *what = "a carriage return not before a newline", p;
    if (p[0] == '?' && p[1] == '?' && (p[2] == '=' || p[2] == '/')) return *what = "a trigraph", p;
  }
  return NULL;
}

int kviews_check(const char *src, unsigned *line, char *why, size_t whylen) {
  const char *what;
  const char *h = hidden_syntax(src, &what);
  if (h) {
    *line = line_of(src, h);
    snprintf(why, whylen, "%s is not allowed in a kernel added by an author", what);
    return -1;
  }
  char *t = code_text(src);
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
