/*
 * coopctl_kernels.c: coopctl kernels (signatures with argument names and
 * require rules), and kernel authors' commands: kernel add FILE, kernel
 * remove NAME, reload. Each author's command waits for coopd's reload to
 * end and prints its outcome: the kernel's signature, or the checker's or
 * compiler's log at the author's file and line (exit 1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coopctl.h"

int cmd_kernels(struct ctl *x, int argc, char **argv) {
  char *pos[1];
  int npos, r = ctl_parse(x, "kernels", argc, argv, NULL, pos, &npos, 0);
  if (r) return r == 1 ? 0 : r;
  if ((r = ctl_connect(x))) return r;
  struct coop_kernel_info *k;
  size_t n;
  int e = coop_kernels_info(x->c, &k, &n);
  if (e) return ctl_fail("kernels", e);
  struct coop_kernel_elems *el = NULL;
  size_t nel = 0;
  if (coop_kernels_elems(x->c, &el, &nel)) nel = 0; /* the types are said without them */
  print_kernels(x, k, n, el, nel);
  free(el);
  free(k);
  return 0;
}

/* FILE's bytes (one more than the protocol takes, so that too large is
 * told apart), or NULL after printing why. */
static char *read_source(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "coopctl: kernel add: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  size_t cap = COOP_SOURCE_MAX + 1;
  char *b = malloc(cap);
  *len = b ? fread(b, 1, cap, f) : 0;
  int bad = !b || ferror(f);
  fclose(f);
  if (bad) {
    fprintf(stderr, "coopctl: kernel add: %s: cannot read\n", path);
    free(b);
    return NULL;
  }
  if (*len == cap) {
    fprintf(stderr, "coopctl: kernel add: %s is larger than %u bytes, the most coopd takes\n", path,
            COOP_SOURCE_MAX);
    free(b);
    return NULL;
  }
  return b;
}

/* The author's request again while another reload is in progress, or
 * before its own last one is [kernels] author_reload_interval_ms old
 * (EBUSY), until timeout_ms (< 0: for ever): each reload ends in seconds.
 * coopd's reason is said once, on stderr, so that the wait is explained. */
static int busy_again(struct ctl *x, const char *what, int e, double t0, int timeout_ms,
                      int *said) {
  if (e != COOP_EBUSY || (timeout_ms >= 0 && (now_s() - t0) * 1000 > timeout_ms)) return 0;
  if (!*said) {
    *said = 1;
    fprintf(stderr, "coopctl: %s: waiting: %s\n", what, coop_errmsg(x->c));
  }
  struct timespec ts = {0, 200000000};
  nanosleep(&ts, NULL);
  return 1;
}

/* A failed outcome: coopd's whole log (the checker's or the compiler's,
 * at the author's file and line), then one line that says what did not
 * happen. Not the log's first line again behind the code's words: that
 * line already says what failed ("megakernel build failed; ...:
 * megakernel build failed (OpenCL error -11). Compiler log:"). An EBUSY
 * that outlived --timeout says so, not EBUSY's own words ("too many tasks
 * in flight"). */
static int outcome_failed(const char *what, const char *undone, int e, char *log, int timeout_ms) {
  if (e == COOP_EBUSY && timeout_ms >= 0) {
    free(log);
    return ctl_error(what, e, "gave up after --timeout %d ms: %s", timeout_ms, coop_errmsg(NULL));
  }
  if (!log || !log[0]) {
    free(log);
    return ctl_fail(what, e);
  }
  fprintf(stderr, "%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
  free(log);
  char m[COOP_TEXT_MAX];
  snprintf(m, sizeof m, "%s", coop_errmsg(NULL)); /* the log's first line, for --json */
  fprintf(stderr, "coopctl: %s: %s (the log above says why)\n", what, undone);
  return ctl_json_error(what, e, m);
}

static int parse_timeout(const char *cmd, const char *s, int *ms) {
  uint32_t v;
  *ms = -1;
  if (s && parse_u32(s, &v)) return ctl_usage(cmd, "bad --timeout %s (ms)", s);
  if (s) *ms = (int)(v > 0x7fffffffu ? 0x7fffffffu : v);
  return 0;
}

static int kernel_add(struct ctl *x, const char *path, int timeout_ms) {
  size_t len;
  char *src = read_source(path, &len);
  if (!src) return 1;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  int r = ctl_connect(x);
  if (r) return free(src), r;
  struct coop_kernel_info k;
  char *log = NULL;
  int e;
  double t0 = now_s();
  int said = 0;
  do e = coop_kernel_add(x->c, base, src, len, &k, &log);
  while (busy_again(x, "kernel add", e, t0, timeout_ms, &said));
  free(src);
  if (e) return outcome_failed("kernel add", "not added", e, log, timeout_ms);
  struct coop_kernel_elems *el = NULL;
  size_t nel = 0;
  if (coop_kernels_elems(x->c, &el, &nel)) nel = 0;
  print_added(x, &k, el, nel);
  free(el);
  return 0;
}

static int kernel_remove(struct ctl *x, const char *name, int timeout_ms) {
  int r = ctl_connect(x);
  if (r) return r;
  char *log = NULL;
  int e;
  double t0 = now_s();
  int said = 0;
  do e = coop_kernel_remove(x->c, name, &log);
  while (busy_again(x, "kernel remove", e, t0, timeout_ms, &said));
  if (e) return outcome_failed("kernel remove", "not removed", e, log, timeout_ms);
  if (x->json) {
    printf("{\"removed\":");
    json_str(stdout, name);
    puts("}");
  } else {
    printf("removed kernel %s\n", name);
  }
  return 0;
}

int cmd_kernel(struct ctl *x, int argc, char **argv) {
  char *pos[2];
  const char *timeout = NULL;
  const struct opt o[] = {{"timeout", &timeout, NULL}, {0}};
  int npos, ms, r = ctl_parse(x, "kernel", argc, argv, o, pos, &npos, 2);
  if (r) return r == 1 ? 0 : r;
  if ((r = parse_timeout("kernel", timeout, &ms))) return r;
  if (npos < 1) return ctl_usage("kernel", "add FILE or remove NAME");
  int add = !strcmp(pos[0], "add");
  if (!add && strcmp(pos[0], "remove"))
    return ctl_usage("kernel", "unknown subcommand %s (add FILE, remove NAME)", pos[0]);
  if (npos < 2) return ctl_usage("kernel", add ? "FILE is missing" : "NAME is missing");
  return add ? kernel_add(x, pos[1], ms) : kernel_remove(x, pos[1], ms);
}

int cmd_reload(struct ctl *x, int argc, char **argv) {
  char *pos[1];
  const char *timeout = NULL;
  const struct opt o[] = {{"timeout", &timeout, NULL}, {0}};
  int npos, ms, r = ctl_parse(x, "reload", argc, argv, o, pos, &npos, 0);
  if (r) return r == 1 ? 0 : r;
  if ((r = parse_timeout("reload", timeout, &ms)) || (r = ctl_connect(x))) return r;
  char *log = NULL;
  int e;
  double t0 = now_s();
  int said = 0;
  do e = coop_reload(x->c, &log);
  while (busy_again(x, "reload", e, t0, ms, &said));
  if (e) return outcome_failed("reload", "the kernels stay as they were", e, log, ms);
  puts(x->json ? "{\"reloaded\":true}" : "reloaded: coopd runs the kernels read again");
  return 0;
}
