/*
 * reload.c: SIGHUP, the kernel reload (docs/daemon.md, "Kernel reload").
 *
 * Loop side of it: read the kernel directories again, build the new
 * megakernel on a libuv work thread (a build takes seconds, and the running
 * megakernel keeps serving meanwhile), then hand it to the device thread,
 * which drains the old one and swaps (device.c). Every failure keeps the
 * running kernels and is logged with its reason, a build's compiler log
 * included; `coopctl stats` shows the last reload's outcome.
 *
 * With several devices, one megakernel is built per device, and each device
 * swaps on its own; the reload succeeds when all have.
 *
 * A client's KERNEL_ADD, KERNEL_REMOVE or RELOAD (kadd.c) starts the same
 * reload with its request attached: the set to build already holds the
 * change, the store (kstore.h) takes it once the set has built (a kernel
 * that does not build is never stored), and the client's answer goes out
 * when the reload has ended, carrying its outcome.
 *
 * Ownership: the struct reload lives from SIGHUP until its last callback;
 * the new kset belongs to it until every swap succeeds, then to the daemon
 * (dm->ks), and the old one is freed. If some device failed to swap (it runs
 * the old kernels again) while another swapped, both sets stay in use: the
 * daemon keeps the new one and the old one is left allocated (rare; logged).
 */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "device/devproc.h"
#include "kadd.h"
#include "kstore.h"
#include "log.h"
#include "sdnotify.h"

struct reload {
  uv_work_t work;
  struct daemon *dm;
  struct kset *ks;
  unsigned ndev;
  int index[COOP_WIRE_MAX_DEVICES]; /* each device's index, for the work thread */
  struct dev *dev[COOP_WIRE_MAX_DEVICES];
  /* each device's new megakernel: a new device process, or NULL where its
   * running one built the set in place (inplace[i]; dev_next_build) */
  struct dp *rt[COOP_WIRE_MAX_DEVICES];
  uint8_t inplace[COOP_WIRE_MAX_DEVICES];
  int try_in_place;         /* [kernels] reload_in_place, as the reload began */
  int check_first;          /* an author's kernel: built first in a process thrown away */
  unsigned swapped, failed; /* swaps reported so far, and failed ones */
  int built;                /* the build is done: the devices swap */
  int err;
  char msg[8192];
  struct reload_req *req; /* a client's, or NULL (SIGHUP) */
  char store[512];        /* [kernels] authored_dir, for the work thread */
  int outcome;            /* 0, or why the reload failed ... */
  char why[8192];         /* ... in words, for req's answer */
};

static void set_outcome(struct daemon *dm, int ok, const char *fmt, const char *what) {
  dm->reloads += ok;
  dm->reload_failures += !ok;
  snprintf(dm->reload_status, sizeof dm->reload_status, fmt, what);
}

static void close_built(struct reload *r) {
  for (unsigned i = 0; i < r->ndev; i++) {
    if (r->rt[i]) dp_close(r->rt[i], DP_CLOSE_MS);
    if (r->inplace[i]) dev_next_cancel(r->dev[i]);
  }
}

/* The first failure is the one a client hears of. */
static void fail(struct reload *r, int err, const char *msg) {
  if (r->outcome) return;
  r->outcome = err;
  snprintf(r->why, sizeof r->why, "%s", msg);
}

static void finish(struct reload *r) {
  if (r->req) kadd_done(r->dm, r->req, r->outcome, r->why);
  if (r->ks) {
    kset_free(r->ks);
    free(r->ks);
  }
  r->dm->reload = NULL;
  if (!r->dm->stopping) reload_notify(r->dm); /* the reload SIGHUP began has ended */
  free(r);
}

/* READY=1 ends the reload for systemd, and STATUS= says how it went: a
 * plain READY=1 would tell `systemctl status` nothing of a reload that
 * failed (its compiler log is in the journal; STATUS gets its first line). */
void reload_notify(struct daemon *dm) {
  char st[sizeof dm->reload_status];
  snprintf(st, sizeof st, "%s", dm->reload_status[0] ? dm->reload_status : "not started");
  st[strcspn(st, "\n")] = '\0'; /* STATUS= is one line */
  char why[sizeof dm->settings_refused];
  snprintf(why, sizeof why, "%s", dm->settings_refused);
  why[strcspn(why, "\n")] = '\0';
  char m[sizeof st + sizeof why + 128];
  snprintf(m, sizeof m, "READY=1\nSTATUS=reload %s%s%s%s", st,
           strncmp(st, "ok", 2) ? "; the previous kernels still run" : "",
           why[0] ? "; settings refused, the running ones stay: " : "", why);
  int e = sdnotify(m);
  if (e < 0) log_warn("NOTIFY_SOCKET: %s", strerror(-e));
}

static void after_build(uv_work_t *w, int status);

static void build_work(uv_work_t *w) {
  struct reload *r = w->data;
  /* a test's hook: a build as slow as a large kernel set's on a GPU */
  const char *delay = getenv("COOP_TEST_BUILD_DELAY_MS");
  if (delay) uv_sleep((unsigned)atoi(delay));
  if (r->check_first) /* begin() says why */
    r->err = dev_check_build(&r->dm->cfg, r->index[0], r->ks, r->msg, sizeof r->msg);
  for (unsigned i = 0; i < r->ndev && !r->err; i++) {
    /* in the running device process where it can be (no second context
     * beside the running jobs, their buffers left in place), else in a new
     * one (docs/daemon.md, "Kernel reload") */
    int e = r->try_in_place ? dev_next_build(r->dev[i], r->ks, r->msg, sizeof r->msg)
                            : DEV_NOT_IN_PLACE;
    r->inplace[i] = e == 0;
    if (e == DEV_NOT_IN_PLACE)
      e = dev_build(&r->dm->cfg, r->index[i], r->ks, &r->rt[i], r->msg, sizeof r->msg);
    r->err = e;
  }
  if (r->err || !r->req) return;
  /* built: the change is kept, so that it outlives a restart of coopd */
  const struct reload_req *q = r->req;
  if (q->op == RELOAD_ADD)
    r->err =
        kstore_write(r->store, q->name, q->uid, q->file, q->source, q->len, r->msg, sizeof r->msg);
  else if (q->op == RELOAD_REMOVE)
    r->err = kstore_remove(r->store, q->name, r->msg, sizeof r->msg);
  if (r->err) r->err = COOP_EIO;
}

static void on_swapped(int err, const char *msg, void *user) {
  struct daemon *dm = user;
  struct reload *r = dm->reload;
  if (!r) return;
  if (err) {
    r->failed++;
    log_error("reload: the new megakernel did not start (%s); the previous kernels run again", msg);
    set_outcome(dm, 0, "failed: the new megakernel did not start: %.180s", msg);
    fail(r, err < 0 ? err : COOP_EFAILED, msg);
  }
  if (++r->swapped < r->ndev) return;
  if (r->failed && r->failed < r->ndev) { /* mixed: both sets in use */
    log_error("reload: %u of %u devices run the new kernels, the others the old ones",
              r->ndev - r->failed, r->ndev);
    dm->ks = r->ks;
    r->ks = NULL;
  } else if (!r->failed) {
    kset_free(dm->ks);
    free(dm->ks);
    dm->ks = r->ks;
    r->ks = NULL;
    log_info("reload: done, %u kernels", dm->ks->n);
    char n[32];
    snprintf(n, sizeof n, "%u", dm->ks->n);
    set_outcome(dm, 1, "ok: %s kernels", n);
  }
  finish(r);
}

/* A stored kernel of an author's that the failed build's log names is
 * left out (kset_drop_failing) and the set built again without it: one
 * that no longer builds (stored by an older coopd, whose rules it broke
 * since) failed every reload, SIGHUP's and every author's request, for
 * as long as it was stored. The kernel a client's ADD brings is no such
 * kernel: its failure is the answer; nor is one that runs beside the
 * others now, which the newcomer made fail (one author's kernel that
 * defined the function of another's took that one's place). 1 when the
 * build is queued again. */
static int retry_without_failing(struct reload *r) {
  int add = r->req && r->req->op == RELOAD_ADD;
  if (r->err != COOP_EBUILD ||
      !kset_drop_failing(r->ks, r->msg, add ? r->req->name : NULL, add ? r->dm->ks : NULL))
    return 0;
  close_built(r);
  memset(r->rt, 0, sizeof r->rt);
  memset(r->inplace, 0, sizeof r->inplace);
  r->check_first = r->try_in_place && kset_authored(r->ks);
  r->err = 0;
  r->msg[0] = '\0';
  if (uv_queue_work(r->dm->loop, &r->work, build_work, after_build) == 0) return 1;
  r->err = COOP_ENOMEM;
  snprintf(r->msg, sizeof r->msg, "cannot queue the build");
  return 0;
}

static void after_build(uv_work_t *w, int status) {
  struct reload *r = w->data;
  struct daemon *dm = r->dm;
  if (status == UV_ECANCELED || dm->stopping || !dm->ndev) {
    set_outcome(dm, 0, "failed: %s", dm->stopping ? "coopd is stopping" : "no device runs");
    fail(r, COOP_ESHUTDOWN, dm->stopping ? "coopd is stopping" : "no device runs");
    close_built(r);
    finish(r);
    return;
  }
  if (r->err && retry_without_failing(r)) return;
  if (r->err) {
    log_error("reload: the new kernels do not build; the running megakernel stays:\n%s", r->msg);
    set_outcome(dm, 0, "failed: %.200s", r->msg);
    fail(r, r->err < 0 ? r->err : COOP_EBUILD, r->msg);
    close_built(r);
    finish(r);
    return;
  }
  unsigned nin = 0;
  for (unsigned i = 0; i < r->ndev; i++) nin += r->inplace[i];
  log_info(
      "reload: built %u kernels (%s)%s; draining the running megakernel (grace %u ms)", r->ks->n,
      nin == r->ndev ? "in place"
      : nin          ? "in place on some devices, in a new device process on others"
                     : "in a new device process",
      r->check_first ? ", an author's first in a device process of its own" : "", dm->cfg.grace_ms);
  r->built = 1;
  unsigned started = 0;
  for (unsigned i = 0; i < r->ndev; i++) {
    if (dev_swap(dm->devs[i], r->rt[i], r->ks, dm->cfg.grace_ms, on_swapped) == 0) {
      started++;
      continue;
    }
    if (r->rt[i]) dp_close(r->rt[i], DP_CLOSE_MS);
    if (r->inplace[i]) dev_next_cancel(r->dev[i]);
    log_error("reload: device %u is busy stopping; its running megakernel stays", i);
    fail(r, COOP_EBUSY, "a device is stopping; its running megakernel stays");
    r->failed++, r->swapped++;
  }
  if (!started) finish(r);
}

/* --check-config's width table for device index `index` (reload_check_build).
 * The name column is as wide as the longest name, at least 20 (a name is
 * shorter than COOP_NAME_MAX): at a fixed 20, a longer name pushed its
 * row's figures right of the others'. */
static void print_widths(FILE *out, int index, const struct dp *rt) {
  static struct coop_rt_width w[DP_WIDTHS_MAX];
  unsigned n = dp_widths(rt, w, DP_WIDTHS_MAX);
  char t[512];
  int col = 20;
  for (unsigned i = 1; i < n; i++)
    if ((int)strnlen(w[i].name, sizeof w[i].name) > col)
      col = (int)strnlen(w[i].name, sizeof w[i].name);
  if (index >= 0)
    fprintf(out, "device index %d: %s on %s\n", index, dp_backend(rt), dp_device_name(rt));
  else
    fprintf(out, "device: %s on %s\n", dp_backend(rt), dp_device_name(rt));
  if (n) fprintf(out, "  %-*s %s\n", col, "(megakernel)", coop_rt_width_text(&w[0], t, sizeof t));
  for (unsigned i = 1; i < n; i++)
    fprintf(out, "  %-*s %s\n", col, w[i].name, coop_rt_width_text(&w[i], t, sizeof t));
  int b = n > 1 ? coop_rt_width_bound(&w[1], (int)n - 1) : -1;
  if (b >= 0) {
    fprintf(out, "  bound by kernel %s (%s)", w[1 + b].name, w[1 + b].bound);
    const char *sep = "; as wide:";
    for (unsigned i = 1; i < n; i++)
      if ((int)i != 1 + b && coop_rt_width_as_wide(&w[i], &w[1 + b]))
        fprintf(out, "%s %s", sep, w[i].name), sep = ",";
    fprintf(out, "\n");
  } else
    fprintf(out, "  bound: n/a (%s gives no occupancy)\n", dp_backend(rt));
}

const char *reload_brings(const struct daemon *dm, const char *name) {
  const struct reload *r = dm->reload;
  if (!r || !r->ks || !kset_find(r->ks, name)) return NULL;
  return r->built ? "waiting for the running megakernel to drain" : "being built";
}

int reload_load(struct daemon *dm, struct kset *ks, char *err, size_t errlen) {
  if (kset_load(ks, dm->cfg.kernel_dirs, err, errlen)) return -1;
  char why[1400];
  if (kstore_load(ks, dm->cfg.authored_dir, why, sizeof why))
    log_warn("authored kernels left out: %s", why); /* the shipped ones still serve */
  return 0;
}

/* Queues the build of r->ks; r becomes dm->reload. 0, or -1 (r freed). */
static int begin(struct daemon *dm, struct reload *r) {
  r->dm = dm;
  r->ndev = dm->ndev;
  for (unsigned i = 0; i < dm->ndev; i++) {
    r->index[i] = dev_index(dm->devs[i]);
    r->dev[i] = dm->devs[i];
  }
  /* A set with an author's kernel is built first in a device process of
   * its own, then thrown away: a compiler that the source crashes fails
   * that reload alone, not the jobs of other users on the running device
   * process (every reload of such a set, not only the author's ADD: a
   * REMOVE or a SIGHUP changes what the stored sources see). Then it is
   * built where every reload builds, in place by default, so that a
   * swap keeps every user's device buffers (docs/daemon.md, "Kernel
   * reload"). */
  r->try_in_place = dm->cfg.reload_in_place;
  r->check_first = r->try_in_place && kset_authored(r->ks);
  snprintf(r->store, sizeof r->store, "%s", dm->cfg.authored_dir);
  dm->reload = r;
  r->work.data = r;
  if (uv_queue_work(dm->loop, &r->work, build_work, after_build)) {
    log_error("reload: cannot queue the build; the running kernels stay");
    fail(r, COOP_ENOMEM, "cannot queue the build");
    finish(r);
    return -1;
  }
  return 0;
}

void reload_start(struct daemon *dm) {
  if (dm->stopping) return;
  if (dm->reload) {
    log_warn("SIGHUP: a reload is already in progress; ignored");
    return;
  }
  struct reload *r = calloc(1, sizeof *r);
  if (r) r->ks = calloc(1, sizeof *r->ks);
  if (!r || !r->ks) {
    free(r);
    log_error("SIGHUP: out of memory; the running kernels stay");
    return;
  }
  char err[1400];
  if (reload_load(dm, r->ks, err, sizeof err)) {
    log_error("reload: %s; the running kernels stay", err);
    set_outcome(dm, 0, "failed: %.200s", err);
    free(r->ks);
    free(r);
    return;
  }
  log_info("SIGHUP: reloading %u kernels from %s", r->ks->n, dm->cfg.kernel_dirs);
  begin(dm, r);
}

int reload_request(struct daemon *dm, struct kset *ks, struct reload_req *req) {
  if (dm->stopping || dm->reload) return -1;
  struct reload *r = calloc(1, sizeof *r);
  if (!r) return -1;
  r->ks = ks;
  r->req = req;
  sdnotify_reloading(); /* systemd sees it as it sees a SIGHUP's */
  log_info("reloading %u kernels for uid %u", ks->n, (unsigned)req->uid);
  begin(dm, r);
  return 0;
}

void reload_forget(struct daemon *dm, const struct session *s) {
  if (dm->reload && dm->reload->req && dm->reload->req->s == s) dm->reload->req->s = NULL;
}

/* --check-config: a reload's build, without the swap, on every configured
 * device ("all": the first), so that a kernel that does not compile is
 * caught before the daemon (or a SIGHUP) meets it. With out, each device's
 * width table too: every kernel measured alone (a compile each, which a
 * normal start makes only with [device] kernel_widths), and the one that
 * bounds the launch. */
int reload_check_build(const struct config *c, const struct kset *ks, FILE *out, char *err,
                       size_t errlen) {
  int idx[COOP_WIRE_MAX_DEVICES];
  int n = config_devices(c, idx, COOP_WIRE_MAX_DEVICES);
  if (n <= 0) idx[0] = 0, n = 1; /* all: probing the others is start-up's job */
  struct config cw = *c;
  cw.kernel_widths = out != NULL;
  for (int i = 0; i < n; i++) {
    struct dp *rt = NULL;
    int e = dev_build(&cw, idx[i], ks, &rt, err, errlen);
    if (rt && out) print_widths(out, idx[i], rt);
    if (rt) dp_close(rt, DP_CLOSE_MS);
    if (e) return e;
  }
  return 0;
}
