/* kset.c: see kset.h. */
#include "kset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coop_util.h"
#include "kernel_check.h"
#include "kviews.h"
#include "log.h"

#define KSET_MAX_SOURCE (1u << 20)

static const char *const type_names[] = {NULL, "u32", "i32", "u64", "i64", "f32", "f64", "buf"};

/* A buffer's element type, `buf<f32>`: cut from t, which is left "buf";
 * COOP_WIRE_ELEM_ANY for any other t, -1 for a "buf<" whose T is not one. */
static int parse_elem(char *t) {
  if (strncmp(t, "buf<", 4)) return COOP_WIRE_ELEM_ANY;
  char name[8];
  size_t l = strlen(t);
  if (t[l - 1] != '>' || l - 5 >= sizeof name) return -1;
  memcpy(name, t + 4, l - 5);
  name[l - 5] = '\0';
  int e = coop_elem_type_of(name);
  if (e > 0) t[3] = '\0';
  return e;
}

static int parse_args(char *v, struct kdef *k, char *err, size_t errlen) {
  k->nargs = 0;
  if (*v == '\0') return 0;
  for (char *save = NULL, *t = strtok_r(v, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(t, ':');
    if (k->nargs < COOP_WIRE_MAX_ARGS) k->argnames[k->nargs][0] = '\0';
    if (colon) {
      *colon = '\0';
      /* with its reason, as a kernel name's */
      if (!coop__is_ident(t))
        return snprintf(err, errlen, "bad argument name \"%s\": not a C identifier", t), -1;
      if (strlen(t) >= sizeof k->argnames[0])
        return snprintf(err, errlen, "bad argument name \"%s\": longer than %zu bytes", t,
                        sizeof k->argnames[0] - 1),
               -1;
      for (unsigned i = 0; i < k->nargs; i++)
        if (!strcmp(k->argnames[i], t))
          return snprintf(err, errlen, "argument name \"%s\" used twice", t), -1;
      if (k->nargs < COOP_WIRE_MAX_ARGS) snprintf(k->argnames[k->nargs], 32, "%s", t);
      t = colon + 1;
    }
    int elem = parse_elem(t);
    if (elem < 0)
      return snprintf(err, errlen,
                      "unknown element type in \"%s\" (buf<T>: T one of u8, i8, u16, i16, u32, "
                      "i32, u64, i64, f32, f64)",
                      t),
             -1;
    unsigned ty = 0;
    for (unsigned i = 1; i < 8; i++)
      if (strcmp(t, type_names[i]) == 0) ty = i;
    if (!ty) return snprintf(err, errlen, "unknown argument type \"%s\"", t), -1;
    if (k->nargs == COOP_WIRE_MAX_ARGS)
      return snprintf(err, errlen, "more than %u arguments", COOP_WIRE_MAX_ARGS), -1;
    k->elems[k->nargs] = (uint8_t)elem;
    k->types[k->nargs++] = (uint8_t)ty;
  }
  return 0;
}

/* What line 1 holds, for the messages about it: the author is told what to
 * write, not only what is wrong. */
#define DIRECTIVE_FORM "//@coop name=NAME kind=cooperative|noncooperative args=[ARG:]TYPE,..."

static int parse_directive(const char *line, struct kdef *k, char *err, size_t errlen) {
  char buf[512];
  if (strncmp(line, "//@coop ", 8) != 0)
    return snprintf(err, errlen, "first line is not a //@coop directive: it must be %s",
                    DIRECTIVE_FORM),
           -1;
  /* a longer line would be cut at the buffer, unsaid: its last argument
   * read as whatever its kept bytes spell (x:buf<f32> as x:buf) */
  size_t l = strcspn(line + 8, "\r\n");
  if (l >= sizeof buf)
    return snprintf(err, errlen,
                    "the directive is too long: %zu bytes after \"//@coop \", at most %zu", l,
                    sizeof buf - 1),
           -1;
  memcpy(buf, line + 8, l);
  buf[l] = '\0';
  int have_name = 0, have_kind = 0, have_args = 0;
  for (char *save = NULL, *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
    char *eq = strchr(t, '=');
    /* a file whose rules came first read as "require is not key=value" */
    if (!eq && !strcmp(t, "require"))
      return snprintf(err, errlen,
                      "a require rule on line 1: the directive comes first (%s), "
                      "its rules on the lines after it",
                      DIRECTIVE_FORM),
             -1;
    if (!eq) return snprintf(err, errlen, "\"%s\" is not key=value", t), -1;
    *eq = '\0';
    char *v = eq + 1;
    if (!strcmp(t, "name")) {
      /* each with its reason: "bad kernel name" alone left its author to
       * guess, where the name was a byte too long or began with coop */
      if (!coop__is_ident(v))
        return snprintf(err, errlen,
                        "bad kernel name \"%s\": not a C identifier (letters, digits and _, "
                        "not starting with a digit)",
                        v),
               -1;
      if (strlen(v) >= COOP_WIRE_NAME_MAX)
        return snprintf(err, errlen, "bad kernel name \"%s\": longer than %u bytes", v,
                        (unsigned)COOP_WIRE_NAME_MAX - 1),
               -1;
      if (!strncmp(v, "coop", 4))
        return snprintf(err, errlen,
                        "bad kernel name \"%s\": names starting with coop are the runtime's", v),
               -1;
      snprintf(k->name, sizeof k->name, "%s", v);
      have_name = 1;
    } else if (!strcmp(t, "kind")) {
      if (strcmp(v, "cooperative") && strcmp(v, "noncooperative"))
        return snprintf(err, errlen, "kind must be cooperative or noncooperative"), -1;
      k->cooperative = !strcmp(v, "cooperative");
      have_kind = 1;
    } else if (!strcmp(t, "args")) {
      if (parse_args(v, k, err, errlen)) return -1;
      have_args = 1;
    } else {
      return snprintf(err, errlen, "unknown key \"%s\"", t), -1;
    }
  }
  if (!have_name || !have_kind || !have_args)
    return snprintf(err, errlen, "the directive needs name=, kind= and args="), -1;
  return 0;
}

/* The lines after the first that start with "//@coop ": admission rules.
 * On error *at is the line that holds it. */
static int parse_rules(const char *src, struct kdef *k, unsigned *at, char *err, size_t errlen) {
  const char *line = strchr(src, '\n');
  unsigned lineno = 1;
  while (line) {
    line++;
    lineno++;
    const char *end = strchr(line, '\n');
    size_t l = end ? (size_t)(end - line) : strlen(line);
    if (l >= 8 && !strncmp(line, "//@coop ", 8)) {
      char buf[REQ_MAX_TEXT + 16];
      *at = lineno;
      if (l - 8 >= sizeof buf) return snprintf(err, errlen, "directive too long"), -1;
      memcpy(buf, line + 8, l - 8);
      buf[l - 8] = '\0';
      buf[strcspn(buf, "\r")] = '\0';
      if (strncmp(buf, "require ", 8))
        return snprintf(err, errlen, "unknown directive (only \"require\" may follow)"), -1;
      if (k->nrules == KDEF_MAX_RULES)
        return snprintf(err, errlen, "more than %u rules", KDEF_MAX_RULES), -1;
      char why[200];
      if (req_compile(&k->rules[k->nrules], buf + 8, (const char(*)[32])k->argnames, k->types,
                      k->nargs, why, sizeof why))
        return snprintf(err, errlen, "%s", why), -1;
      k->nrules++;
    }
    line = end;
  }
  return 0;
}

int kdef_admit(const struct kdef *k, const uint64_t *bits, const uint64_t *lens, char *why,
               size_t whylen) {
  for (unsigned i = 0; i < k->nrules; i++)
    if (req_check(&k->rules[i], (const char(*)[32])k->argnames, k->types, bits, lens, why, whylen))
      return -1;
  return 0;
}

/* A *.cl name is no promise of a regular file: a FIFO there would block a
 * plain open (and the loop thread with it, at start or on SIGHUP), a device
 * node would read forever. Opened without blocking and without following a
 * symlink's last component; a file that is not regular is skipped (1) with
 * a warning. 0 with *src, 1, or -1 with err. */
int kset_read_file(const char *path, char **src, char *err, size_t errlen) {
  *src = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP) {
    log_warn("kernel %s is a symbolic link: skipped (put the file itself there)", path);
    return 1;
  }
  if (fd < 0) return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    log_warn("kernel %s is not a regular file: skipped", path);
    close(fd);
    return 1;
  }
  char *b = malloc(KSET_MAX_SOURCE + 1);
  size_t n = 0;
  ssize_t k = 1;
  while (b && n <= KSET_MAX_SOURCE && k > 0) {
    k = read(fd, b + n, KSET_MAX_SOURCE + 1 - n);
    if (k < 0 && errno == EINTR)
      k = 1;
    else if (k > 0)
      n += (size_t)k;
  }
  close(fd);
  if (!b || k < 0 || n > KSET_MAX_SOURCE) {
    free(b);
    snprintf(err, errlen, "%s: %s", path,
             !b      ? "out of memory"
             : k < 0 ? "read error"
                     : "too large");
    return -1;
  }
  b[n] = '\0';
  *src = b;
  return 0;
}

/* The argument accessors with a literal index against the directive's
 * args= (coop_kernel_check_args). */
static int check_args(const struct kdef *k, const char *src, unsigned *at, char *why,
                      size_t whylen) {
  const char *types[COOP_WIRE_MAX_ARGS];
  char decl[COOP_WIRE_MAX_ARGS][16]; /* "buf<f32>" */
  for (unsigned i = 0; i < k->nargs; i++) {
    types[i] = type_names[k->types[i]];
    if (k->elems[i]) {
      snprintf(decl[i], sizeof decl[i], "buf<%s>", coop_elem_type_name(k->elems[i]));
      types[i] = decl[i];
    }
  }
  return coop_kernel_check_args(src, types, k->nargs, at, why, whylen);
}

/* A function src defines that the runtime or a kernel of s defines too:
 * every kernel builds into one program, and the compiler named the later
 * definition, which was another kernel's file where the newcomer sorts
 * before it (an author's kernel before another's), or a line of the
 * generated source where the runtime's code after the kernels defines
 * the name. -1 with the newcomer's line in *at and the other definition
 * in why: its file and line where the newcomer's owner may read them
 * (coopd's own kernels, the owner's own), its kernel's name alone where
 * another author added it. 0 with src's definitions in *defs (*ndefs of
 * them), the caller's to keep (kdef.defs) or free. */
static int check_clash(const struct kset *s, const char *src, uint32_t owner,
                       struct coop_kernel_def **defs, int *ndefs, unsigned *at, char *why,
                       size_t whylen) {
  struct coop_kernel_def *mine;
  int n = coop_kernel_defs(src, &mine), r = 0;
  if (n == -2) {
    *at = mine[0].line;
    snprintf(why, whylen, "function '%s' is past the %d functions one kernel's source may define",
             mine[0].name, COOP_KERNEL_MAX_DEFS);
    free(mine);
    return -1;
  }
  if (n < 0) return snprintf(why, whylen, "out of memory"), -1;
  for (int i = 0; i < n && !r; i++)
    if (coop_kernel_runtime_defines(mine[i].name))
      *at = mine[i].line,
      r = snprintf(why, whylen,
                   "redefinition of '%s': the runtime defines a function of that name "
                   "(names starting with coop are the runtime's)",
                   mine[i].name);
  for (unsigned k = 0; k < s->n && !r; k++) {
    const struct kdef *o = &s->k[k];
    for (int i = 0; i < n && !r; i++) {
      const struct coop_kernel_def *od =
          coop_kernel_def_find(o->defs, (size_t)o->ndefs, mine[i].name);
      if (!od) continue;
      *at = mine[i].line;
      if (o->owner == KDEF_SHIPPED || o->owner == owner || owner == KDEF_SHIPPED)
        r = snprintf(why, whylen,
                     "redefinition of '%s': kernel %s defines a function of that name at "
                     "%s:%u (the kernels build into one program)",
                     mine[i].name, o->name, o->path, od->line);
      else
        r = snprintf(why, whylen,
                     "redefinition of '%s': another author's kernel %s defines a function of "
                     "that name (the kernels build into one program)",
                     mine[i].name, o->name);
    }
  }
  if (r) {
    free(mine);
    return -1;
  }
  coop_kernel_defs_sort(mine, (size_t)n); /* kept sorted: coop_kernel_def_find */
  *defs = mine, *ndefs = n;
  return 0;
}

int kset_add_source(struct kset *s, const char *path, char *src, uint32_t owner,
                    const struct kdef **dup, char *err, size_t errlen) {
  char why[512];
  struct kdef k;
  memset(&k, 0, sizeof k);
  k.owner = owner;
  if (!src) return snprintf(err, errlen, "out of memory"), -1;
  /* Every error names the file and line as compilers do (FILE:LINE:), so
   * that an editor jumps there; what concerns the kernel as a whole
   * (its name, its kind, the definitions its kind needs) is on line 1,
   * the directive that declares them. */
  unsigned at = 1;
  int r = -1;
  if (parse_directive(src, &k, why, sizeof why) || parse_rules(src, &k, &at, why, sizeof why) ||
      (owner != KDEF_SHIPPED && kviews_check(src, &at, why, sizeof why))) {
    snprintf(err, errlen, "%s:%u: %s", path, at, why);
  } else if (kset_find(s, k.name)) {
    const struct kdef *d = kset_find(s, k.name);
    snprintf(err, errlen, "%s:1: kernel \"%s\" already defined in %s:1", path, k.name, d->path);
    if (dup) *dup = d, r = -2;
  } else if (coop_kernel_check(k.name, k.cooperative, src, why, sizeof why)) {
    snprintf(err, errlen, "%s:1: %s", path, why);
  } else if (check_args(&k, src, &at, why, sizeof why) ||
             check_clash(s, src, owner, &k.defs, &k.ndefs, &at, why, sizeof why)) {
    snprintf(err, errlen, "%s:%u: %s", path, at, why);
  } else if (s->n == COOP_MAX_KERNELS) {
    snprintf(err, errlen, "%s: more than %u kernels", path, COOP_MAX_KERNELS);
  } else {
    unsigned vline;
    char vwhy[128];
    k.views = owner != KDEF_SHIPPED || kviews_check(src, &vline, vwhy, sizeof vwhy) == 0;
    /* a shipped kernel's macros end with it too: an author's kernel after
     * it that defines one of them (a copy of bfs.cl) would meet its guard */
    if (!(src = kviews_seal(src, owner != KDEF_SHIPPED)))
      return free(k.defs), snprintf(err, errlen, "out of memory"), -1; /* src freed */
    struct kdef *nk = realloc(s->k, (s->n + 1) * sizeof *nk);
    if (!nk) {
      snprintf(err, errlen, "out of memory");
    } else {
      s->k = nk;
      k.source = src;
      snprintf(k.path, sizeof k.path, "%s", path);
      s->k[s->n++] = k;
      return 0;
    }
  }
  free(k.defs);
  free(src);
  return r;
}

void kset_remove(struct kset *s, unsigned i) {
  if (i >= s->n) return;
  free(s->k[i].source);
  free(s->k[i].defs);
  memmove(&s->k[i], &s->k[i + 1], (s->n - i - 1) * sizeof *s->k);
  s->n--;
}

static int load_one(struct kset *s, const char *path, char *err, size_t errlen) {
  char *src;
  int r = kset_read_file(path, &src, err, errlen);
  if (r) return r < 0 ? -1 : 0;
  return kset_add_source(s, path, src, KDEF_SHIPPED, NULL, err, errlen) ? -1 : 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of one directory in name order, so the program is reproducible. */
static int load_dir(struct kset *s, const char *dir, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) return snprintf(err, errlen, "kernel directory %s: %s", dir, strerror(errno)), -1;
  char **names = NULL;
  size_t n = 0;
  int r = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 3, ".cl") || e->d_name[0] == '.') continue;
    char **nn = realloc(names, (n + 1) * sizeof *nn);
    if (!nn || !(nn[n] = strdup(e->d_name))) {
      names = nn ? nn : names;
      r = -1;
      snprintf(err, errlen, "out of memory");
      break;
    }
    names = nn;
    n++;
  }
  closedir(d);
  if (r == 0 && n) qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (r == 0) r = load_one(s, path, err, errlen);
    free(names[i]);
  }
  free(names);
  return r;
}

int kset_load(struct kset *s, const char *dirs, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", dirs);
  for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    if (load_dir(s, d, err, errlen)) {
      kset_free(s);
      return -1;
    }
  }
  if (s->n == 0) return snprintf(err, errlen, "no *.cl kernel in %s", dirs), kset_free(s), -1;
  return 0;
}

void kset_free(struct kset *s) {
  for (unsigned i = 0; i < s->n; i++) free(s->k[i].source), free(s->k[i].defs);
  free(s->k);
  memset(s, 0, sizeof *s);
}

int kset_authored(const struct kset *s) {
  for (unsigned i = 0; i < s->n; i++)
    if (s->k[i].owner != KDEF_SHIPPED) return 1;
  return 0;
}

/* Whether p, inside log, starts a line or follows a line's "error: ". */
static int starts_error_line(const char *log, const char *p) {
  static const char pfx[] = "error: ";
  size_t n = sizeof pfx - 1;
  if (p == log || p[-1] == '\n') return 1;
  if ((size_t)(p - log) < n || strncmp(p - n, pfx, n)) return 0;
  return p - n == log || p[-(ptrdiff_t)n - 1] == '\n';
}

/* The line of log that names file as a compiler names the file of an
 * error (PoCL: "error: f.cl:2:2: ...", clang: "f.cl:2:2: error: ...",
 * NVRTC: "f.cl(2): error ..."), or NULL. Only there: a shipped kernel's
 * path ends in an author's file name (/usr/share/coop/kernels/f.cl), and
 * a file name inside a message's own words ("... f.cl:1:1" after a space)
 * would otherwise leave that file's kernel out. */
static const char *line_naming(const char *log, const char *file) {
  size_t l = strlen(file);
  for (const char *p = log; l && (p = strstr(p, file)); p++) {
    if (!starts_error_line(log, p) || (p[l] != ':' && p[l] != '(') || p[l + 1] < '0' ||
        p[l + 1] > '9')
      continue;
    while (p > log && p[-1] != '\n') p--;
    return p;
  }
  return NULL;
}

/* Whether running (NULL: none) holds k as it is: it built beside the
 * others, so a failure that names it now is the newcomer's doing (a
 * function of its name defined again in another author's kernel before
 * it). */
static int runs(const struct kset *running, const struct kdef *k) {
  const struct kdef *r = running ? kset_find(running, k->name) : NULL;
  return r && r->owner == k->owner && !strcmp(r->source, k->source);
}

unsigned kset_drop_failing(struct kset *s, const char *log, const char *keep,
                           const struct kset *running) {
  unsigned n = 0;
  for (unsigned i = s->n; i-- > 0;) {
    const struct kdef *k = &s->k[i];
    const char *at =
        k->owner == KDEF_SHIPPED || (keep && !strcmp(k->name, keep)) || runs(running, k)
            ? NULL
            : line_naming(log, k->path);
    if (!at) continue;
    log_error(
        "authored kernel %s of uid %u (%s) does not build: left out, the other kernels "
        "build without it: %.*s",
        k->name, (unsigned)k->owner, k->path, (int)strcspn(at, "\n"), at);
    kset_remove(s, i);
    n++;
  }
  return n;
}

const struct kdef *kset_find(const struct kset *s, const char *name) {
  for (unsigned i = 0; i < s->n; i++)
    if (strcmp(s->k[i].name, name) == 0) return &s->k[i];
  return NULL;
}
