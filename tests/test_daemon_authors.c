/*
 * test_daemon_authors.c: kernel authors ([kernels] authors; PROTOCOL.md,
 * "Kernel authors"; docs/kernels.md, "Adding a kernel without root"). One
 * coopd serves the whole case, restarted once to show that an added kernel
 * outlives it; builds take seconds on PoCL, so only the requests that must
 * build (a compile error, the good kernel, its removal) start a reload.
 * Other uids where run as root (CI): 65534 is an author, 65533 is not.
 */
#define _GNU_SOURCE /* popen's prototype under -std=c11 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coop_util.h"
#include "daemon_harness.h"

static const char triple_src[] =
    "//@coop name=triple kind=noncooperative args=data:buf,n:u32\n"
    "//@coop require n*4 <= len(data)\n"
    "void triple(struct coop_ctx *c) {\n"
    "  coop_buf_u32 d = coop_arg_buf_u32(c, 0);\n"
    "  coop_u32 n = coop_arg_u32(c, 1);\n"
    "  if (coop_group_id(c) == 0u)\n"
    "    for (coop_u32 i = coop_local_id_c(c); i < n; i += coop_local_size_c(c))\n"
    "      coop_at(d, i) = coop_at(d, i) * 3u;\n"
    "}\n";

/* KERNEL_ADD of src as file; the reply's type (c->m holds it). */
static uint16_t add(struct conn *c, const char *file, const char *src, size_t len) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.kernel_add.file, sizeof m.kernel_add.file, "%s", file);
  m.kernel_add.source = (const uint8_t *)src;
  m.kernel_add.source_len = (uint32_t)len;
  return reply(c, send_msg(c, COOP_MSG_KERNEL_ADD, &m, NULL, 0));
}

static uint16_t remove_kernel(struct conn *c, const char *name) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.kernel_remove.name, sizeof m.kernel_remove.name, "%s", name);
  return reply(c, send_msg(c, COOP_MSG_KERNEL_REMOVE, &m, NULL, 0));
}

/* An ERROR reply with code, its message holding says. */
static void refused(struct conn *c, uint16_t type, int code, const char *says) {
  ck_assert_uint_eq(type, COOP_MSG_ERROR);
  ck_assert_int_eq(c->m.error.code, code);
  assert_has(c->m.error.message, says);
}

/* A KERNEL_DONE that failed with code, its log holding says. */
static void failed(struct conn *c, uint16_t type, int code, const char *says) {
  ck_assert_uint_eq(type, COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c->m.kernel_done.error, code);
  char log[4096];
  uint32_t n = c->m.kernel_done.log_len < sizeof log - 1 ? c->m.kernel_done.log_len
                                                         : (uint32_t)sizeof log - 1;
  memcpy(log, c->m.kernel_done.log, n);
  log[n] = '\0';
  assert_has(log, says);
}

/* Sources refused before any build: kernel h (noncooperative) with
 * `before` ahead of its function and `after` behind it, added as `file`;
 * its KERNEL_DONE fails EBUILD saying `said`. */
struct refused_src {
  const char *file, *before, *after, *said;
};

static void each_refused(struct conn *c, const struct refused_src *r, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char src[256];
    snprintf(src, sizeof src,
             "//@coop name=h kind=noncooperative args=buf\n%svoid h(struct coop_ctx *c) {}\n%s",
             r[i].before, r[i].after);
    failed(c, add(c, r[i].file, src, strlen(src)), COOP_EBUILD, r[i].said);
  }
}

/* uid's requests (as_user's body): add triple as its own, remove triple,
 * remove nosuch; each reply's code, 0 for a KERNEL_DONE that succeeded. */
static void add_remove(struct conn *c, const void *arg, void *out) {
  (void)arg;
  int *got = out;
  uint16_t t = add(c, "mine.cl", triple_src, strlen(triple_src));
  got[0] = t == COOP_MSG_ERROR ? c->m.error.code : c->m.kernel_done.error;
  t = remove_kernel(c, "triple");
  got[1] = t == COOP_MSG_ERROR ? c->m.error.code : c->m.kernel_done.error;
  t = remove_kernel(c, "nosuch");
  got[2] = t == COOP_MSG_ERROR ? c->m.error.code : c->m.kernel_done.error;
}

static void as_uid(const struct daemon_proc *d, uid_t uid, int codes[3]) {
  as_user(d, uid, add_remove, NULL, codes, 3 * sizeof *codes);
}

/* triple over [1, 2, 3, 4]: [3, 6, 9, 12]. */
static void triple_runs(struct conn *c) {
  uint32_t in[4] = {1, 2, 3, 4}, out[4];
  union coop_msg m;
  submit_init(&m, "triple", 1, 0);
  arg_buf(&m.submit, COOP_BUF_INOUT, in, sizeof in, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 4);
  uint64_t job = submit(c, &m, NULL, 0);
  ck_assert_uint_ne(job, 0);
  ck_assert_uint_eq(wait_job(c, job, 60000), COOP_MSG_RESULT);
  ck_assert_uint_eq(c->m.result.state, COOP_JOB_DONE);
  ck_assert_uint_eq(c->m.result.bufs[0].len, sizeof out);
  memcpy(out, c->m.result.bufs[0].data, sizeof out);
  for (int i = 0; i < 4; i++) ck_assert_uint_eq(out[i], 3u * (uint32_t)(i + 1));
}

/* The KERNEL_LIST record of name, or 0. */
static int find_kernel(struct conn *c, const char *name, struct coop_wire_kernel *k) {
  ck_assert_uint_eq(reply(c, send_msg(c, COOP_MSG_KERNELS, NULL, NULL, 0)), COOP_MSG_KERNEL_LIST);
  uint32_t off = 0;
  for (uint32_t i = 0; i < c->m.kernels.n; i++) {
    ck_assert_int_eq(coop_wire_kernel_next(&c->m.kernels, &off, k), 0);
    if (!strcmp(k->name, name)) return 1;
  }
  return 0;
}

/* coopctl with args; its exit status, its stdout and stderr in out. */
static int coopctl(const struct daemon_proc *d, const char *args, char *out, size_t len) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --socket %s %s 2>&1", COOPCTL_PATH, d->sock, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The next notification holding want within timeout_s: 1, or 0. */
static int notified(int ns, const char *want, char *got, size_t len, int timeout_s) {
  for (time_t end = time(NULL) + timeout_s; time(NULL) < end;) {
    struct timeval tv = {1, 0};
    setsockopt(ns, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = recv(ns, got, len - 1, 0);
    if (n < 0) continue;
    got[n] = '\0';
    if (strstr(got, want)) return 1;
  }
  return 0;
}

/* A kernel directory of the test's own (kernels_dir_make) holding the
 * authors' store, the settings that name both, and a log's path. */
struct author_dirs {
  char kdir[64], store[96], dirs[96], dir_set[128], logp[128];
};

static void author_dirs_make(struct author_dirs *a) {
  snprintf(a->kdir, sizeof a->kdir, "/tmp/coopd-authors-XXXXXX");
  kernels_dir_make(a->kdir);
  snprintf(a->store, sizeof a->store, "%s/store", a->kdir);
  snprintf(a->dirs, sizeof a->dirs, "kernels.dirs=%s", a->kdir);
  snprintf(a->dir_set, sizeof a->dir_set, "kernels.authored_dir=%s", a->store);
  snprintf(a->logp, sizeof a->logp, "%s/coopd.log", a->kdir);
}

/* Removes them, with what the store still holds. */
static void author_dirs_remove(struct author_dirs *a) {
  DIR *dir = opendir(a->store);
  for (struct dirent *e; dir && (e = readdir(dir));) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", a->store, e->d_name);
    if (e->d_name[0] != '.') unlink(path);
  }
  if (dir) closedir(dir);
  unlink(a->logp), rmdir(a->store);
  kernels_dir_remove(a->kdir);
}

/* The opening of most tests here: a kernel directory of the test's own
 * with its store (ad), before(ad) if given (files put there first), and
 * coopd started on them with root an author, extra (NULL: none) among its
 * settings, its log at ad->logp; c a connection to it, HELLO said. */
static void authors_daemon(struct author_dirs *ad, struct daemon_proc *d, struct conn *c,
                           const char *extra, void (*before)(const struct author_dirs *)) {
  author_dirs_make(ad);
  if (before) before(ad);
  const char *sets[] = {ad->dirs, ad->dir_set, "kernels.authors=0", extra, NULL};
  *d = (struct daemon_proc){.log = ad->logp};
  daemon_start_log(d, sets);
  open_hello(c, d);
}

START_TEST(kernel_authors) {
  struct author_dirs ad;
  author_dirs_make(&ad);
  char *kdir = ad.kdir, *store = ad.store, *dirs = ad.dirs, *dir_set = ad.dir_set, *logp = ad.logp;
  char nsp[96], path[160], out[8192];
  snprintf(nsp, sizeof nsp, "%s/notify", kdir);
  const char *sets[] = {dirs,
                        dir_set,
                        "kernels.authors=0,65534",
                        "kernels.max_source_bytes=4096",
                        "log.level=info",
                        "kernels.max_per_author=1",
                        NULL};
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", nsp);
  int ns = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_eq(bind(ns, (struct sockaddr *)&a, sizeof a), 0);
  setenv("NOTIFY_SOCKET", nsp, 1);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  unsetenv("NOTIFY_SOCKET");
  daemon_open_to_all(&d);
  struct stat st;
  ck_assert_int_eq(stat(store, &st), 0); /* made at start, for authors */
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  char got[512];
  ck_assert(notified(ns, "READY=1", got, sizeof got, 60));
  struct conn c;
  open_hello(&c, &d);
  if (geteuid() == 0) { /* not an author: refused before anything is read */
    int codes[3];
    as_uid(&d, 65533, codes);
    ck_assert_int_eq(codes[0], COOP_EPERM);
    ck_assert_int_eq(codes[1], COOP_EPERM);
  }

  /* a compile error, through coopctl: the compiler's log at the author's
   * file and line (bad.cl, not the store's path), exit 1; the failed
   * reload reaches systemd as STATUS= */
  char srcdir[96]; /* the author's files: not among coopd's kernels */
  snprintf(srcdir, sizeof srcdir, "%s/src", kdir);
  ck_assert_int_eq(mkdir(srcdir, 0755), 0);
  snprintf(path, sizeof path, "%s/bad.cl", srcdir);
  file_write(path,
             "//@coop name=bad kind=noncooperative args=buf\n"
             "void bad(struct coop_ctx *c) {\n"
             "  not_declared_here(c);\n"
             "}\n");
  char args[256];
  snprintf(args, sizeof args, "kernel add %s", path);
  int rc = coopctl(&d, args, out, sizeof out);
  /* the author's line: bad.cl:3 from clang (PoCL), bad.cl(3) from NVRTC */
  int at_line = strstr(out, "bad.cl:3") || strstr(out, "bad.cl(3)");
  if (rc != 1 || !at_line) log_print(logp);
  ck_assert_msg(rc == 1, "coopctl kernel add of a broken kernel exited %d: %s", rc, out);
  ck_assert_msg(at_line, "no bad.cl:3 or bad.cl(3) in: %s", out);
  assert_has(out, "not_declared_here");
  ck_assert_ptr_null(strstr(out, store));
  ck_assert(notified(ns, "RELOADING=1", got, sizeof got, 10));
  ck_assert(notified(ns, "READY=1", got, sizeof got, 60));
  assert_has(got, "STATUS=reload failed: ");
  unlink(path);
  rmdir(srcdir);

  /* refused by the checks shipped kernels pass, at the author's line */
  const char nostep[] =
      "//@coop name=twice kind=cooperative args=buf\n"
      "struct twice_state { coop_u32 x; };\n"
      "void twice_init(struct coop_ctx *c, struct twice_state *s) {}\n";
  failed(&c, add(&c, "twice.cl", nostep, strlen(nostep)), COOP_EBUILD,
         "twice.cl:1: cooperative kernel \"twice\" defines no twice_step");
  const char raw[] =
      "//@coop name=raw kind=noncooperative args=buf\n"
      "void raw(struct coop_ctx *c) {\n"
      "  COOP_GLOBAL coop_u32 *p = (COOP_GLOBAL coop_u32 *)coop_arg_buf(c, 0);\n"
      "  p[0] = 1u;\n"
      "}\n";
  failed(&c, add(&c, "raw.cl", raw, strlen(raw)), COOP_EBUILD, "raw.cl:3: COOP_GLOBAL");
  const char inc[] =
      "//@coop name=inc kind=noncooperative args=buf\n"
      "#include \"/etc/passwd\"\n"
      "void inc(struct coop_ctx *c) {}\n";
  failed(&c, add(&c, "inc.cl", inc, strlen(inc)), COOP_EBUILD, "inc.cl:2: #include");
  /* what the compiler reads as a directive, an include or a refused name
   * where a line's scan saw none: each was let through, and an #include
   * of a file only coopd's user may read came back in the build's log (a
   * crash of the compiler, or a build that waits on a FIFO, under a
   * reload of every user's kernels) */
  static const struct refused_src hidden[] = {
      {"dig.cl", "%:include \"/etc/shadow\"\n", "", "dig.cl:2: the digraph %:"},
      {"cr.cl", "\r#include \"/etc/shadow\"\n", "", "cr.cl:2: a carriage return"},
      {"bs.cl", "#\\ \ninclude \"/etc/shadow\"\n", "", "bs.cl:2: #include"},
      {"glob.cl", "glo\\ \nbal coop_u32 *p;\n", "", "glob.cl:2: global"},
      {"prag.cl", "_Pragma(\"clang __debug crash\")\n", "", "prag.cl:2: _Pragma"},
      {"has.cl", "#if __has_include(\"/tmp/go\")\n#endif\n", "", "has.cl:2: __has_include"},
      {"tri.cl", "?\?=include \"/etc/shadow\"\n", "", "tri.cl:2: a trigraph"},
      {"ff.cl", "\f#include \"/etc/shadow\"\n", "", "ff.cl:2: a form feed"},
      {"vt.cl", "#\vundef COOP_SCHED_HELPERS\n", "", "vt.cl:2: a form feed or a vertical tab"},
      {"nbsp.cl", "\xc2\xa0#include \"/etc/shadow\"\n", "", "nbsp.cl:2: a byte outside ASCII"},
  };
  each_refused(&c, hidden, sizeof hidden / sizeof *hidden);
  const char clash[] =
      "//@coop name=render kind=noncooperative args=buf\n"
      "void render(struct coop_ctx *c) {}\n";
  refused(&c, add(&c, "r.cl", clash, strlen(clash)), COOP_EEXIST,
          "kernel render is one of coopd's own kernels");
  static char big[4097];
  memset(big, ' ', sizeof big);
  memcpy(big, triple_src, strlen(triple_src));
  refused(&c, add(&c, "big.cl", big, 4097), COOP_ETOOBIG, "max_source_bytes allows 4096");
  refused(&c, remove_kernel(&c, "nosuch"), COOP_ENOKERNEL, "no kernel named nosuch");
  /* not an identifier: its newline went into coopd's log as a line of its own */
  refused(&c, remove_kernel(&c, "x\n2026-01-01 00:00:00.000 coopd error: forged"), COOP_EINVAL,
          "a kernel's name is a C identifier");
  refused(&c, remove_kernel(&c, "sweep"), COOP_EPERM,
          "one of coopd's own kernels ([kernels] dirs): remove its file from those directories");

  /* the good kernel: its signature comes back, a job of it runs */
  ck_assert_uint_eq(add(&c, "triple.cl", triple_src, strlen(triple_src)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  ck_assert_uint_eq(c.m.kernel_done.has_kernel, 1);
  struct coop_wire_kernel *k = &c.m.kernel_done.kernel;
  ck_assert_str_eq(k->name, "triple");
  ck_assert_uint_eq(k->nargs, 2);
  ck_assert_str_eq(k->argnames[0], "data");
  ck_assert_str_eq(k->argnames[1], "n");
  ck_assert_uint_eq(k->nrules, 1);
  ck_assert_str_eq(k->rules[0], "n*4 <= len(data)");
  ck_assert_uint_eq(k->owner, geteuid());
  triple_runs(&c);
  ck_assert(log_has(logp, "kernel add triple from triple.cl"));
  /* an author's kernel is built first in a device process of its own, not
   * in the one that runs other users' jobs; then in place, as reloads
   * build by default (an_authors_kernel_that_crashes_a_build_costs_no_one) */
  ck_assert(log_has(logp, "kernels (in place), an author's first in a device process of its own"));
  /* one kernel per author here: a second name is refused; the same name
   * again would replace it */
  const char quad[] =
      "//@coop name=quad kind=noncooperative args=buf\n"
      "void quad(struct coop_ctx *c) {}\n";
  refused(&c, add(&c, "quad.cl", quad, strlen(quad)), COOP_ELIMIT, "max_per_author allows 1");
  if (geteuid() == 0) { /* another author: neither shadows it nor removes it */
    int codes[3];
    as_uid(&d, 65534, codes);
    ck_assert_int_eq(codes[0], COOP_EEXIST);
    ck_assert_int_eq(codes[1], COOP_EPERM);
    ck_assert_int_eq(codes[2], COOP_ENOKERNEL);
    ck_assert(log_has(logp, "uid 65534: kernel remove triple refused"));
  }

  /* coopctl kernels: argument names and rules, and whose */
  ck_assert_int_eq(coopctl(&d, "kernels", out, sizeof out), 0);
  assert_has(out, "sweep cooperative data:buf<u32>,n:u32,rounds:u32\n  require n*4 <= len(data)\n");
  assert_has(out, "triple noncooperative data:buf,n:u32\n  require n*4 <= len(data)\n  added by");
  ck_assert_int_eq(coopctl(&d, "--json kernels", out, sizeof out), 0);
  assert_has(out,
             "\"name\":\"triple\",\"cooperative\":false,\"args\":[\"buf\",\"u32\"],"
             "\"argnames\":[\"data\",\"n\"],\"elems\":[\"\",\"\"],\"rules\":[\"n*4 <= "
             "len(data)\"],\"owner\":");

  /* a restart keeps it, with its owner */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  ck_assert_int_eq(mkdir(d.dir, 0700), 0);
  daemon_spawn(&d, sets);
  conn_reconnect(&c, &d);
  struct coop_wire_kernel *kk = malloc(sizeof *kk);
  ck_assert(find_kernel(&c, "triple", kk));
  ck_assert_uint_eq(kk->owner, geteuid());
  ck_assert_str_eq(kk->argnames[0], "data");
  free(kk);
  triple_runs(&c);

  /* removed: its jobs are refused, and it is gone from the store */
  ck_assert_uint_eq(remove_kernel(&c, "triple"), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  union coop_msg m;
  submit_init(&m, "triple", 1, 0);
  arg_buf(&m.submit, COOP_BUF_INOUT, big, 16, COOP_WIRE_FD_NONE);
  arg_u32(&m.submit, 4);
  ck_assert_uint_eq(submit(&c, &m, NULL, 0), 0);
  ck_assert_int_eq(c.m.error.code, COOP_ENOKERNEL);
  snprintf(path, sizeof path, "%s/triple.cl", store);
  ck_assert_int_ne(access(path, F_OK), 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  close(ns);
  unlink(nsp);
  author_dirs_remove(&ad);
}
END_TEST

/* Two RELOADs from uid (as_user's body), the second sent at once after
 * the first's reply: each reply's code (0 for a KERNEL_DONE that
 * succeeded), and the message of one that failed. */
struct two_reloads {
  int first, second;
  char said[256];
};

static void reload_twice(struct conn *c, const void *arg, void *out) {
  (void)arg;
  struct two_reloads *r = out;
  int *got[2] = {&r->first, &r->second};
  for (int i = 0; i < 2; i++) {
    uint16_t t = reply(c, send_msg(c, COOP_MSG_RELOAD, NULL, NULL, 0));
    *got[i] = t == COOP_MSG_ERROR ? c->m.error.code : c->m.kernel_done.error;
    if (t == COOP_MSG_ERROR) snprintf(r->said, sizeof r->said, "%.255s", c->m.error.message);
  }
}

static struct two_reloads reload_twice_as(const struct daemon_proc *d, uid_t uid) {
  struct two_reloads r = {0};
  as_user(d, uid, reload_twice, NULL, &r, sizeof r);
  return r;
}

/* KERNEL_REMOVEs from uid (as_user's body) of a name no one has, of a
 * shipped kernel and of another author's stored but not running: each
 * reply's error code. */
static void remove_three(struct conn *c, const void *arg, void *out) {
  (void)arg;
  int *got = out;
  const char *names[] = {"no_such_kernel", "sweep", "theirs"};
  for (int i = 0; i < 3; i++)
    got[i] = remove_kernel(c, names[i]) == COOP_MSG_ERROR ? c->m.error.code : 0;
}

/* Kernel `theirs` of uid 4242 in store, as an ADD leaves it, while the
 * running set holds none (a build that failed at a reload leaves it so). */
static void store_theirs(const char *store) {
  mkdir(store, 0700);
  char path[200];
  snprintf(path, sizeof path, "%s/theirs.owner", store);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("4242 theirs.cl\n", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/theirs.cl", store);
  ck_assert_ptr_nonnull(f = fopen(path, "w"));
  fputs("/* coop: name=theirs */\n", f);
  fclose(f);
}

/* Hardening: an author's reloads, spaced. Each one builds every kernel and
 * swaps the megakernel under every user's jobs; an author could send them
 * back to back for ever (a second RELOAD right after the first was taken
 * and built). Now its next one waits [kernels] author_reload_interval_ms
 * from the end of its last: EBUSY with the time left, also after it
 * reconnects; root, not bound, reloads at once. A REMOVE that cannot be
 * (no such kernel, not the author's) is refused at once meanwhile. */
START_TEST(an_authors_reloads_are_spaced) {
  if (geteuid() != 0) return; /* needs another uid: CI runs as root */
  struct author_dirs ad;
  author_dirs_make(&ad);
  const char *sets[] = {"kernels.authors=65534", "kernels.author_reload_interval_ms=600000",
                        ad.dir_set, NULL};
  struct daemon_proc d = {0};
  daemon_start_log(&d, sets);
  daemon_open_to_all(&d);
  struct two_reloads r = reload_twice_as(&d, 65534);
  ck_assert_int_eq(r.first, 0);
  ck_assert_int_eq(r.second, COOP_EBUSY);
  assert_has(r.said,
             "uid 65534's last kernel reload ended less than [kernels] "
             "author_reload_interval_ms = 600000 ms ago: ask again in");
  r = reload_twice_as(&d, 65534); /* a new connection: still spaced */
  ck_assert_int_eq(r.first, COOP_EBUSY);
  /* within the interval, a REMOVE that cannot be is told so at once: it
   * was EBUSY, and coopctl asked again until the interval ended; so was
   * another author's kernel stored but not running still */
  store_theirs(ad.store);
  int rm[3] = {0, 0, 0};
  as_user(&d, 65534, remove_three, NULL, rm, sizeof rm);
  ck_assert_int_eq(rm[0], COOP_ENOKERNEL);
  ck_assert_int_eq(rm[1], COOP_EPERM);
  ck_assert_int_eq(rm[2], COOP_EPERM);
  /* theirs does not load (no directive): no set holds it, and a REMOVE,
   * root's too, said no kernel of that name while its files stayed; it is
   * removed from the store alone, without a reload */
  struct conn c;
  open_hello(&c, &d);
  ck_assert_uint_eq(remove_kernel(&c, "theirs"), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  char gone[200];
  snprintf(gone, sizeof gone, "%s/theirs.cl", ad.store);
  ck_assert_int_ne(access(gone, F_OK), 0);
  author_dirs_remove(&ad); /* root's RELOAD below builds without it */
  uint16_t t = reply(&c, send_msg(&c, COOP_MSG_RELOAD, NULL, NULL, 0));
  ck_assert_uint_eq(t, COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* An author's kernel that builds at its ADD, and crashes the compiler at a
 * later build (a source whose outcome something outside it changes: an
 * include, refused above; here the test hook COOP_TEST_CRASH_BUILD, with
 * its file made after the ADD). A reload of a set holding it (the
 * author's RELOAD or REMOVE, a SIGHUP) was built in the running device
 * process, which died under every user's jobs. Now such a set is built
 * first in a device process of its own: the author's RELOAD fails, and
 * root's sweep runs on untouched (no restart) until it is cancelled. And an
 * ADD, built in a new device process that then replaced the running one,
 * lost every user's device buffers; now it is built in place after its
 * check: root's device buffer reads back. And coopd, restarted with that
 * kernel stored, refused to start; now it starts with the shipped kernels
 * (docs/daemon.md, "Kernel authors"). */
START_TEST(an_authors_kernel_that_crashes_a_build_costs_no_one) {
  struct author_dirs ad;
  author_dirs_make(&ad);
  char *dirs = ad.dirs, *dir_set = ad.dir_set, *logp = ad.logp;
  char arm[128], crash[200];
  snprintf(arm, sizeof arm, "%s/crash", ad.kdir);
  snprintf(crash, sizeof crash, "boom_crashes_a_build:%s", arm);
  const char *sets[] = {
      dirs, dir_set, "kernels.authors=0", "kernels.author_reload_interval_ms=0", "log.level=info",
      NULL};
  setenv("COOP_TEST_CRASH_BUILD", crash, 1);
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  unsetenv("COOP_TEST_CRASH_BUILD");
  struct conn c;
  open_hello(&c, &d);
  uint64_t buf = buf_create_raw(&c, 4096);
  ck_assert_uint_eq(add(&c, "triple.cl", triple_src, strlen(triple_src)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  ck_assert(log_has(logp, "kernels (in place), an author's first in a device process of its own"));
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.buf_range = (struct coop_msg_buf_range){.buffer = buf, .len = 64, .fd = COOP_WIRE_FD_NONE};
  uint16_t t = reply(&c, send_msg(&c, COOP_MSG_BUF_READ, &m, NULL, 0));
  ck_assert_msg(t == COOP_MSG_BUF_DATA, "root's device buffer after an author's ADD: %s",
                t == COOP_MSG_ERROR ? c.m.error.message : "?");

  static const char boom[] =
      "//@coop name=boom kind=noncooperative args=buf\n"
      "/* boom_crashes_a_build */\n"
      "void boom(struct coop_ctx *c) {}\n";
  ck_assert_uint_eq(add(&c, "boom.cl", boom, strlen(boom)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  static uint32_t words[64];
  uint64_t sweep = sweep_submit(&c, words, 64, 100000000u, 1, -1); /* until cancelled */
  ck_assert_uint_ne(sweep, 0);
  wait_running(&c, sweep);
  int a = open(arm, O_CREAT | O_WRONLY | O_CLOEXEC, 0600); /* boom no longer builds */
  ck_assert_int_ge(a, 0);
  close(a);
  t = reply(&c, send_msg(&c, COOP_MSG_RELOAD, NULL, NULL, 0));
  ck_assert_uint_eq(t, COOP_MSG_KERNEL_DONE);
  ck_assert_int_ne(c.m.kernel_done.error, 0);
  msleep(300);
  if (log_has(logp, "restart")) log_print(logp);
  ck_assert(!log_has(logp, "restart"));
  ck_assert_uint_eq(job_state(&c, sweep), COOP_JOB_RUNNING);
  cancel_ok(&c, sweep);
  ck_assert_uint_eq(wait_job(&c, sweep, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_CANCELLED, "root's sweep: %s %s",
                coop_job_state_name(c.m.result.state), c.m.result.message);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  /* a start whose stored set no longer builds: coopd refused to start
   * ("cannot start device"); now it starts with the shipped kernels */
  setenv("COOP_TEST_CRASH_BUILD", crash, 1);
  daemon_start_log(&d, sets);
  unsetenv("COOP_TEST_CRASH_BUILD");
  ck_assert(log_has(logp, "with the kernels authors added"));
  open_hello(&c, &d);
  ck_assert(has_kernel(&c, "render"));
  ck_assert(!has_kernel(&c, "boom"));
  unlink(arm);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  author_dirs_remove(&ad);
}
END_TEST

/* A cooperative kernel's source of 256 KiB of "a(" (unclosed): the check
 * for its definitions scanned from each "a(" to the source's end, on
 * coopd's loop (2.9 s for 64 KiB, 17.5 s for 256 KiB on this machine),
 * and no other client was served meanwhile; a refusal costs the author
 * nothing, so it could be sent again at once. Now the parentheses are
 * matched in one pass: another connection's STATS is answered at once. */
START_TEST(an_authors_source_is_checked_in_one_pass) {
  const char *sets[] = {"kernels.authors=0", "kernels.max_source_bytes=262144", NULL};
  struct daemon_proc d = {0};
  daemon_start_log(&d, sets);
  struct conn c, other;
  open_hello(&c, &d);
  open_hello(&other, &d);
  static char src[262144];
  const char head[] = "//@coop name=a kind=cooperative args=buf\n";
  memcpy(src, head, sizeof head - 1);
  for (size_t i = sizeof head - 1; i + 1 < sizeof src; i += 2) src[i] = 'a', src[i + 1] = '(';
  src[sizeof src - 1] = '\n';
  union coop_msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.kernel_add.file, sizeof m.kernel_add.file, "a.cl");
  m.kernel_add.source = (const uint8_t *)src;
  m.kernel_add.source_len = sizeof src;
  uint32_t seq = send_msg(&c, COOP_MSG_KERNEL_ADD, &m, NULL, 0);
  msleep(50); /* the ADD read first */
  int64_t t0 = coop__now_ns();
  struct coop_msg_stats_reply st = stats(&other);
  (void)st;
  double ms = (double)(coop__now_ns() - t0) / 1e6;
  ck_assert_msg(ms < 1000, "another client's STATS took %.0f ms beside an author's check", ms);
  uint16_t t = reply(&c, seq);
  ck_assert_msg(t == COOP_MSG_KERNEL_DONE, "%s", t == COOP_MSG_ERROR ? c.m.error.message : "?");
  failed(&c, t, COOP_EBUILD, "a.cl:1: cooperative kernel \"a\" defines no struct");
  conn_close(&other);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* An author's kernel z with a helper zh, for the two tests below. */
static const char z[] =
    "//@coop name=z kind=noncooperative args=buf\n"
    "coop_u32 zh(coop_u32 x) { return x; }\n"
    "void z(struct coop_ctx *c) {}\n";

/* An added kernel was built last in its set, but every later reload and
 * every start read the store back in name order: kernel a, calling a
 * helper of the author's kernel z added before it, built at its ADD, then
 * the next request of any author failed on a.cl (zh undeclared) and
 * coopd started without any author's kernels. Now an added kernel is built
 * where the store puts it: a's ADD is the one that fails, and a reload
 * after it builds. */
START_TEST(an_authors_kernel_builds_where_the_store_puts_it) {
  struct author_dirs ad;
  struct daemon_proc d;
  struct conn c;
  authors_daemon(&ad, &d, &c, NULL, NULL);
  static const char a[] =
      "//@coop name=a kind=noncooperative args=d:buf\n"
      "void a(struct coop_ctx *c) {\n"
      "  coop_buf_u32 d = coop_arg_buf_u32(c, 0);\n"
      "  coop_at(d, 0) = zh(1u);\n"
      "}\n";
  ck_assert_uint_eq(add(&c, "z.cl", z, strlen(z)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  failed(&c, add(&c, "a.cl", a, strlen(a)), COOP_EBUILD, "zh"); /* a.cl:4: or a.cl(4) */
  uint16_t t = reply(&c, send_msg(&c, COOP_MSG_RELOAD, NULL, NULL, 0));
  ck_assert_uint_eq(t, COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  author_dirs_remove(&ad);
}
END_TEST

/* Every kernel builds into one program: an author's helper of a name that
 * another kernel, sorted after it, or the runtime's code after the kernels
 * defines failed to compile at that other definition, "z.cl:2:10:
 * redefinition of 'zh'" and "coop-megakernel.cl:2788:18: static
 * declaration of 'coop__kernel_is_coop' ...", the author's own file and
 * line nowhere. Now the ADD is refused before any build at the author's
 * definition, naming the other one. */
START_TEST(an_authors_helper_clash_names_its_line) {
  struct author_dirs ad;
  struct daemon_proc d;
  struct conn c;
  authors_daemon(&ad, &d, &c, NULL, NULL);
  static const char a[] =
      "//@coop name=a kind=noncooperative args=buf\n"
      "/* zh, as z has it */\n"
      "\n"
      "coop_u32 zh(coop_u32 x) { return x + x; }\n"
      "void a(struct coop_ctx *c) {}\n";
  static const char rt[] =
      "//@coop name=rt kind=noncooperative args=buf\n"
      "\n"
      "coop_u32 coop__kernel_is_coop(coop_u32 k) { return 0u; }\n"
      "void rt(struct coop_ctx *c) {}\n";
  ck_assert_uint_eq(add(&c, "z.cl", z, strlen(z)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  failed(&c, add(&c, "a.cl", a, strlen(a)), COOP_EBUILD,
         "a.cl:4: redefinition of 'zh': kernel z defines a function of that name at z.cl:2");
  failed(&c, add(&c, "rt.cl", rt, strlen(rt)), COOP_EBUILD,
         "rt.cl:3: redefinition of 'coop__kernel_is_coop': the runtime defines");
  ck_assert(has_kernel(&c, "z"));
  ck_assert(!has_kernel(&c, "a"));
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  author_dirs_remove(&ad);
}
END_TEST

/* A shipped kernel's #define reached every kernel after it: an author's
 * copy of bfs.cl that kept its #define BFS_UNREACHED (the same definition,
 * which C allows) built, then met the guard of each name an author's
 * kernel defines ("BFS_UNREACHED is defined before this kernel (by the
 * compiler or the runtime)"). A shipped kernel's macros now end with it. */
/* shipdef.cl among coopd's kernels: a #define of its own. */
static void put_shipdef(const struct author_dirs *ad) {
  char shipped[300];
  snprintf(shipped, sizeof shipped, "%s/shipdef.cl", ad->kdir);
  FILE *f = fopen(shipped, "w");
  ck_assert_ptr_nonnull(f);
  fputs(
      "//@coop name=shipdef kind=noncooperative args=d:buf\n"
      "#define SHIPDEF_NONE 0xFFFFFFFFu\n"
      "void shipdef(struct coop_ctx *c) {\n"
      "  coop_buf_u32 d = coop_arg_buf_u32(c, 0);\n"
      "  coop_at(d, 0) = SHIPDEF_NONE;\n"
      "}\n",
      f);
  ck_assert_int_eq(fclose(f), 0);
}

START_TEST(a_shipped_kernels_macros_end_with_it) {
  struct author_dirs ad;
  struct daemon_proc d;
  struct conn c;
  authors_daemon(&ad, &d, &c, NULL, put_shipdef);
  char shipped[300];
  snprintf(shipped, sizeof shipped, "%s/shipdef.cl", ad.kdir);
  static const char mine[] =
      "//@coop name=mine kind=noncooperative args=d:buf\n"
      "#define SHIPDEF_NONE 0xFFFFFFFFu\n"
      "void mine(struct coop_ctx *c) {\n"
      "  coop_buf_u32 d = coop_arg_buf_u32(c, 0);\n"
      "  coop_at(d, 0) = SHIPDEF_NONE;\n"
      "}\n";
  ck_assert_uint_eq(add(&c, "mine.cl", mine, strlen(mine)), COOP_MSG_KERNEL_DONE);
  ck_assert_msg(c.m.kernel_done.error == 0, "a copy of a shipped kernel's #define: %.*s",
                (int)c.m.kernel_done.log_len, (const char *)c.m.kernel_done.log);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  unlink(shipped);
  author_dirs_remove(&ad);
}
END_TEST

/* An author's #define reached every line compiled after its kernel: the
 * glue of every cooperative kernel and the runtime's own device files. A
 * kernel that defined coop__after_step as 1 built, and then every user's
 * sweep ended after its first step, DONE with wrong words. Now each name
 * an author's kernel defines is undefined after it, and an #undef of a
 * name it did not define itself is refused (docs/kernels.md, "Adding a
 * kernel without root"): root's sweep of 10 rounds adds 10 to each word,
 * beside a kernel that defines `go`, a name of the glue. And a name the
 * runtime or the compiler may have defined before the kernel (COOP_*,
 * coop_*, cl_*, CL_*, _*) is refused: its appended #undef took that
 * definition from the code after the kernel, where COOP_SCHED_HELPERS's
 * #ifdef, through CUDA, then chose the scheduler without its helpers. */
START_TEST(an_authors_macros_end_with_its_kernel) {
  struct author_dirs ad;
  struct daemon_proc d;
  struct conn c;
  authors_daemon(&ad, &d, &c, NULL, NULL);
  /* an #undef of another's name, a conditional left open, and what would
   * leave the #undefs appended after the kernel inside it */
  static const struct refused_src macros[] = {
      {"u.cl", "#undef M_TWO\n", "",
       "u.cl:2: #undef M_TWO: a kernel added by an author may undefine only"},
      {"h.cl", "#define COOP_SCHED_HELPERS 1\n", "",
       "h.cl:2: #define COOP_SCHED_HELPERS: a kernel added by an author may not define"},
      {"a.cl", "#define __CUDA_ARCH__ 900\n", "", "a.cl:2: #define __CUDA_ARCH__: a kernel"},
      {"x.cl", "#define cl_khr_fp64 1\n", "", "x.cl:2: #define cl_khr_fp64: a kernel"},
      {"s.cl", "#define coop__after_step(c, r, s, n) 1\n", "",
       "s.cl:2: #define coop__after_step: a kernel added by an author may not define"},
      {"if.cl", "#if 1\n", "", "if.cl:2: a conditional not closed by an #endif"},
      {"endif.cl", "#endif\n", "", "endif.cl:2: a conditional without its #if"},
      {"else.cl", "#ifdef A\n#endif\n#else\n", "", "else.cl:4: a conditional without its #if"},
      {"com.cl", "", "/* open\n#define X 1\n", "com.cl:3: a comment not closed within the kernel"},
      {"bsl.cl", "", "#define X 1 \\ ", "bsl.cl:3: a backslash at the kernel's end"},
  };
  each_refused(&c, macros, sizeof macros / sizeof *macros);
  /* a name of the compiler's own: its appended #undef took FLT_MAX from
   * every kernel after this one (their builds failed on it). OpenCL's;
   * NVRTC defines no such name before the kernels, nothing to guard */
  const char *be = getenv("COOP_BACKEND");
  if (!be || strcmp(be, "cuda")) {
    static const struct refused_src compilers[] = {
        {"f.cl", "\n#define FLT_MAX 1.0f\n", "",
         "FLT_MAX is defined before this kernel (by the compiler or the runtime)"}};
    each_refused(&c, compilers, 1);
  }
  static const char one_step[] = /* its own #undef is taken; go is the glue's */
      "//@coop name=m kind=noncooperative args=buf\n"
      "#define go 0\n"
      "#define M_ONE 1\n"
      "#undef M_ONE\n"
      "void m(struct coop_ctx *c) {}\n";
  ck_assert_uint_eq(add(&c, "m.cl", one_step, strlen(one_step)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  uint32_t words[64];
  for (uint32_t i = 0; i < 64; i++) words[i] = i;
  uint64_t sweep = sweep_submit(&c, words, 64, 10, 1, -1);
  ck_assert_uint_ne(sweep, 0);
  ck_assert_uint_eq(wait_job(&c, sweep, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_msg(c.m.result.state == COOP_JOB_DONE, "root's sweep: %s %s",
                coop_job_state_name(c.m.result.state), c.m.result.message);
  ck_assert_uint_eq(c.m.result.bufs[0].len, sizeof words);
  memcpy(words, c.m.result.bufs[0].data, sizeof words);
  for (uint32_t i = 0; i < 64; i++)
    ck_assert_msg(words[i] == i + 10, "word %u of root's sweep is %u, want %u", i, words[i],
                  i + 10);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  author_dirs_remove(&ad);
}
END_TEST

/* How many children of coopd have oom_score_adj 1000, and whether the
 * running device process (running) has 0. */
static int children_oom_first(pid_t coopd, pid_t running, int *running_zero) {
  pid_t kids[64];
  unsigned n = children_of(coopd, kids, NULL, 64);
  int first = 0;
  for (unsigned i = 0; i < n; i++) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)kids[i]);
    FILE *f = fopen(path, "r");
    int adj = 0;
    if (f && fscanf(f, "%d", &adj) != 1) adj = 0;
    if (f) fclose(f);
    first += adj == 1000;
    if (kids[i] == running) *running_zero = adj == 0;
  }
  return first;
}

/* An author's kernel whose preprocessing grows without end (each macro
 * twice the one before: 2^25 terms in an #if) built for as long as it
 * took, up to coopd's 600 s bound on any build, and grew as it went (2 s
 * and 277 MB for 2^22 through clang here), in a process the OOM killer
 * ranked as any other of coopd's. Now the build of a set that holds an
 * author's kernel, in its device process of its own, is stopped past
 * [kernels] author_build_ms (1.5 s here) and the reload fails saying so;
 * that process is the first the OOM killer takes (oom_score_adj 1000),
 * the device process that runs the jobs keeps its 0. */
START_TEST(an_authors_build_is_bounded) {
  struct author_dirs ad;
  struct daemon_proc d;
  struct conn c;
  authors_daemon(&ad, &d, &c, "kernels.author_build_ms=1500", NULL);
  pid_t running = device_process(d.pid);
  char src[2048];
  int o = snprintf(src, sizeof src,
                   "//@coop name=grow kind=noncooperative args=buf\n"
                   "#define G0 1+\n");
  for (int i = 1; i <= 25; i++)
    o += snprintf(src + o, sizeof src - (size_t)o, "#define G%d G%d G%d\n", i, i - 1, i - 1);
  snprintf(src + o, sizeof src - (size_t)o,
           "#if G25 0\n#endif\nvoid grow(struct coop_ctx *c) {}\n");
  union coop_msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.kernel_add.file, sizeof m.kernel_add.file, "grow.cl");
  m.kernel_add.source = (const uint8_t *)src;
  m.kernel_add.source_len = (uint32_t)strlen(src);
  int64_t t0 = coop__now_ns();
  uint32_t seq = send_msg(&c, COOP_MSG_KERNEL_ADD, &m, NULL, 0);
  int first = 0, running_zero = 0;
  for (int i = 0; i < 100 && !first; i++, msleep(20))
    first = children_oom_first(d.pid, running, &running_zero);
  ck_assert_msg(first == 1, "no device process of coopd's had oom_score_adj 1000 while it built");
  ck_assert_msg(running_zero, "the device process that runs the jobs is not at oom_score_adj 0");
  uint16_t t = reply(&c, seq);
  double s_took = (double)(coop__now_ns() - t0) / 1e9;
  ck_assert_uint_eq(t, COOP_MSG_KERNEL_DONE);
  ck_assert_int_ne(c.m.kernel_done.error, 0);
  char log[1024];
  uint32_t n =
      c.m.kernel_done.log_len < sizeof log - 1 ? c.m.kernel_done.log_len : (uint32_t)sizeof log - 1;
  memcpy(log, c.m.kernel_done.log, n);
  log[n] = '\0';
  assert_has(log, "the build took more than 1500 ms ([kernels] author_build_ms): stopped");
  ck_assert_msg(s_took < 10, "the ADD's answer took %.1f s", s_took);
  ck_assert(!has_kernel(&c, "grow"));
  ck_assert_int_eq(device_process(d.pid), running); /* no restart */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  author_dirs_remove(&ad);
}
END_TEST

/* dir/name with text. */
static void put(const char *dir, const char *name, const char *text) {
  char path[300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

/* The store as an older coopd left it: uid 65534's kernel flt, which
 * defines FLT_MAX (refused since, by the guard its build meets), and uid
 * 65533's triple. */
static void put_stored(const struct author_dirs *ad) {
  ck_assert_int_eq(mkdir(ad->store, 0700), 0);
  put(ad->store, "flt.cl",
      "//@coop name=flt kind=noncooperative args=buf\n"
      "#define FLT_MAX 1.0f\n"
      "void flt(struct coop_ctx *c) {}\n");
  put(ad->store, "flt.owner", "65534 flt.cl\n");
  put(ad->store, "triple.cl", triple_src);
  put(ad->store, "triple.owner", "65533 mine.cl\n");
}

/* An author's stored kernel that no longer builds (one stored by an older
 * coopd that defines FLT_MAX, guarded since) failed the build of the whole
 * set: coopd started without any author's kernels, and every reload after
 * (SIGHUP, any author's request) failed on it. Now it costs only itself:
 * left out with a line naming its author, kernel and the compiler's words,
 * while the other author's triple serves, at start and at each reload
 * (docs/daemon.md, "Kernel authors"). */
START_TEST(a_stored_kernel_that_no_longer_builds_costs_only_itself) {
  const char *be = getenv("COOP_BACKEND");
  if (be && !strcmp(be, "cuda")) return; /* NVRTC defines no FLT_MAX before the kernels */
  struct author_dirs ad;
  struct daemon_proc d;
  struct conn c;
  authors_daemon(&ad, &d, &c, "log.level=info", put_stored);
  if (!has_kernel(&c, "triple")) log_print(ad.logp);
  ck_assert(has_kernel(&c, "triple"));
  ck_assert(!has_kernel(&c, "flt"));
  ck_assert(log_has(ad.logp, "kernel flt of uid 65534 (flt.cl) does not build: left out"));
  ck_assert(log_has(ad.logp, "FLT_MAX is defined before this kernel"));
  triple_runs(&c);
  kill(d.pid, SIGHUP);
  int ended = 0;
  for (int i = 0; i < 2400 && !ended; i++, msleep(50))
    ended = log_has(ad.logp, "reload: done") || log_has(ad.logp, "do not build");
  if (!log_has(ad.logp, "reload: done")) log_print(ad.logp);
  ck_assert(log_has(ad.logp, "reload: done"));
  ck_assert_int_eq(log_count(ad.logp, "kernel flt of uid 65534 (flt.cl) does not build"), 2);
  ck_assert(has_kernel(&c, "triple"));
  ck_assert(!has_kernel(&c, "flt"));
  uint16_t t = reply(&c, send_msg(&c, COOP_MSG_RELOAD, NULL, NULL, 0)); /* an author's request */
  ck_assert_uint_eq(t, COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  ck_assert(has_kernel(&c, "triple"));
  triple_runs(&c);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  author_dirs_remove(&ad);
}
END_TEST

/* uid 65534's ADD (as_user's body): a kernel that defines a function
 * triple beside its own, so that it builds only where root's triple is
 * not. Its KERNEL_DONE's error into out. */
static void add_over_triple(struct conn *c, const void *arg, void *out) {
  (void)arg;
  static const char src[] =
      "//@coop name=taker kind=noncooperative args=buf\n"
      "void triple(struct coop_ctx *c) {}\n"
      "void taker(struct coop_ctx *c) {}\n";
  uint16_t t = add(c, "taker.cl", src, strlen(src));
  *(int *)out = t == COOP_MSG_ERROR ? c->m.error.code : c->m.kernel_done.error;
}

/* A running kernel of another author's is no stored kernel that no longer
 * builds: an ADD whose build fails on it fails, and leaves it in. Before,
 * uid 65534's kernel, sorted first, defined triple, the log named root's
 * mine.cl at "redefinition of 'triple'", and triple was left out and the
 * ADD done: at every start and reload after, too. */
START_TEST(an_authors_add_never_leaves_anothers_kernel_out) {
  if (geteuid() != 0) return; /* as_user */
  struct author_dirs ad;
  struct daemon_proc d;
  struct conn c;
  authors_daemon(&ad, &d, &c, "kernels.authors=0,65534", NULL);
  daemon_open_to_all(&d);
  ck_assert_uint_eq(add(&c, "mine.cl", triple_src, strlen(triple_src)), COOP_MSG_KERNEL_DONE);
  ck_assert_int_eq(c.m.kernel_done.error, 0);
  int e = 0;
  ck_assert_int_eq(as_user(&d, 65534, add_over_triple, NULL, &e, sizeof e), 0);
  if (!has_kernel(&c, "triple")) log_print(ad.logp);
  ck_assert(has_kernel(&c, "triple"));
  ck_assert(!has_kernel(&c, "taker"));
  ck_assert_int_eq(e, COOP_EBUILD);
  triple_runs(&c);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  author_dirs_remove(&ad);
}
END_TEST

void daemon_authors_cases(Suite *s) {
  TCase *t = tcase_create("authors");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, kernel_authors);
  tcase_add_test(t, an_authors_reloads_are_spaced);
  tcase_add_test(t, an_authors_kernel_that_crashes_a_build_costs_no_one);
  tcase_add_test(t, an_authors_source_is_checked_in_one_pass);
  tcase_add_test(t, an_authors_macros_end_with_its_kernel);
  tcase_add_test(t, an_authors_build_is_bounded);
  tcase_add_test(t, an_authors_kernel_builds_where_the_store_puts_it);
  tcase_add_test(t, an_authors_helper_clash_names_its_line);
  tcase_add_test(t, a_shipped_kernels_macros_end_with_it);
  tcase_add_test(t, a_stored_kernel_that_no_longer_builds_costs_only_itself);
  tcase_add_test(t, an_authors_add_never_leaves_anothers_kernel_out);
  suite_add_tcase(s, t);
}
