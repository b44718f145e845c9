/* kadd.c: see kadd.h. */
#include "kadd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coop_util.h"
#include "kstore.h"
#include "log.h"
#include "session.h"

/* Whether the author's name for the file can stand in messages and in the
 * #line that names it to the compiler: a base name, printable, unquoted. */
static int file_name_ok(const char *f) {
  if (!f[0] || !strcmp(f, ".") || !strcmp(f, "..")) return 0;
  for (const char *p = f; *p; p++)
    if (*p == '/' || *p == '"' || *p == '\\' || *p < 0x20 || *p > 0x7e) return 0;
  return 1;
}

/* The checks every request makes first: 0, or the ERROR already sent. */
static int may_change(struct session *s, uint32_t seq, int root_too) {
  struct daemon *dm = s->dm;
  if (!authors_allow(&dm->authors, s->fd, s->uid) && !(root_too && s->uid == 0)) {
    log_info("uid %u asked to change the kernels: not an author ([kernels] authors)", s->uid);
    sess_error(s, seq, COOP_EPERM,
               "uid %u may not change coopd's kernels: [kernels] authors (coopd.ini) lists the "
               "users and groups who may",
               s->uid);
    return -1;
  }
  if (dm->reload || dm->stopping) {
    sess_error(s, seq, COOP_EBUSY,
               dm->stopping ? "coopd is stopping"
                            : "a kernel reload is in progress: ask again once it has ended");
    return -1;
  }
  return 0;
}

/* Each reload builds every kernel again and swaps the megakernel under
 * every user's jobs (their cooperative ones suspended for the swap, their
 * tasks drained): an author's loop of them made everyone pay again and
 * again, and kept other authors' requests answered EBUSY. So an author's
 * next reload starts [kernels] author_reload_interval_ms after its last
 * one ended (root: at once). coopctl asks again on EBUSY. Asked after the
 * request's own checks: a REMOVE of a name that does not exist, or of a
 * kernel not the author's, waited out the interval (10 s by default) to
 * be told so. */
static int may_reload_now(struct session *s, uint32_t seq) {
  struct daemon *dm = s->dm;
  const struct uid_use *u = s->uid ? uid_find(dm, s->uid) : NULL;
  int64_t now = coop__now_ns();
  if (u && u->reload_next > now) {
    int64_t ms = (u->reload_next - now + 999999) / 1000000;
    sess_error(s, seq, COOP_EBUSY,
               "uid %u's last kernel reload ended less than [kernels] author_reload_interval_ms "
               "= %u ms ago: ask again in %lld ms",
               s->uid, dm->cfg.author_reload_interval_ms, (long long)ms);
    return -1;
  }
  return 0;
}

static struct kset *load_set(struct session *s, uint32_t seq) {
  struct kset *ks = calloc(1, sizeof *ks);
  char err[1400];
  if (!ks) return sess_error(s, seq, COOP_ENOMEM, "out of memory"), NULL;
  if (reload_load(s->dm, ks, err, sizeof err)) {
    free(ks);
    sess_error(s, seq, COOP_EIO, "the kernels cannot be read: %s", err);
    return NULL;
  }
  return ks;
}

static void set_free(struct kset *ks) {
  kset_free(ks);
  free(ks);
}

static void req_free(struct reload_req *q) {
  if (!q) return;
  free(q->source);
  free(q);
}

/* Hands ks and q to a new reload; on failure answers and frees both. */
static void start(struct session *s, uint32_t seq, struct kset *ks, struct reload_req *q) {
  if (reload_request(s->dm, ks, q) == 0) return;
  sess_error(s, seq, COOP_EBUSY, "the reload could not start: ask again");
  set_free(ks);
  req_free(q);
}

static struct reload_req *new_req(struct session *s, uint32_t seq, enum reload_op op) {
  struct reload_req *q = calloc(1, sizeof *q);
  if (!q) return sess_error(s, seq, COOP_ENOMEM, "out of memory"), NULL;
  q->op = op;
  q->s = s;
  q->seq = seq;
  q->uid = s->uid;
  return q;
}

/* A checked but refused source: a KERNEL_DONE with the checker's message
 * at the author's FILE:LINE, as a failed build's log. */
static void refuse_source(struct session *s, uint32_t seq, const char *log) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.kernel_done.error = COOP_EBUILD;
  m.kernel_done.nkernels = s->dm->ks->n;
  m.kernel_done.log = (const uint8_t *)log;
  m.kernel_done.log_len = (uint32_t)strlen(log);
  log_info("uid %u: kernel add refused: %s", s->uid, log);
  sess_send(s, COOP_MSG_KERNEL_DONE, seq, &m);
}

static unsigned owned_by(const struct kset *ks, uint32_t uid) {
  unsigned n = 0;
  for (unsigned i = 0; i < ks->n; i++) n += ks->k[i].owner == uid;
  return n;
}

/* The kernel just appended to ks (its last) moved to where kstore_load
 * puts it: the authors' kernels follow the shipped ones in name order. A
 * set built with the new kernel last built at its ADD, then every later
 * reload and every start read it back in name order, where a kernel that
 * used what a kernel of a later name defines (a helper, a type) no longer
 * built: every author's next request then failed on it, and coopd started
 * without any author's kernels. */
static unsigned place_by_name(struct kset *ks) {
  unsigned last = ks->n - 1, at = last;
  while (at > 0 && ks->k[at - 1].owner != KDEF_SHIPPED &&
         strcmp(ks->k[at - 1].name, ks->k[last].name) > 0)
    at--;
  struct kdef k = ks->k[last];
  memmove(&ks->k[at + 1], &ks->k[at], (last - at) * sizeof *ks->k);
  ks->k[at] = k;
  return at;
}

/* The source into ks, replacing the author's own kernel of its name, at
 * its place by name. Its index, or -1 with the answer sent. */
static int put_source(struct session *s, uint32_t seq, struct kset *ks, const char *file,
                      const char *src) {
  char err[1400];
  const struct kdef *dup = NULL;
  int r = kset_add_source(ks, file, strdup(src), s->uid, &dup, err, sizeof err);
  if (r == -2 && dup->owner == s->uid) { /* its own: replaced */
    kset_remove(ks, (unsigned)(dup - ks->k));
    r = kset_add_source(ks, file, strdup(src), s->uid, NULL, err, sizeof err);
  } else if (r == -2) {
    sess_error(s, seq, COOP_EEXIST, "kernel %s %s: choose another name", dup->name,
               dup->owner == KDEF_SHIPPED ? "is one of coopd's own kernels"
                                          : "was added by another author");
    log_info("uid %u: kernel add %s refused: the name is taken", s->uid, dup->name);
    return -1;
  }
  if (r) return refuse_source(s, seq, err), -1;
  return (int)place_by_name(ks);
}

/* KERNEL_ADD: checked here (size, name, the rules shipped kernels pass),
 * built by a reload, stored once built. */
void sess_kernel_add(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                     unsigned nfds) {
  const struct coop_msg_kernel_add *a = &msg->kernel_add;
  const struct config *c = &s->dm->cfg;
  if (may_change(s, seq, 0) || may_reload_now(s, seq)) return;
  if (!file_name_ok(a->file))
    return sess_error(s, seq, COOP_EINVAL,
                      "the file name must be a base name of printable characters without "
                      "quotes or backslashes (coopctl sends the file's base name)");
  if (a->source_len > c->max_source_bytes)
    return sess_error(s, seq, COOP_ETOOBIG,
                      "%s is %u bytes; [kernels] max_source_bytes allows %llu", a->file,
                      a->source_len, c->max_source_bytes);
  if (memchr(a->source, 0, a->source_len))
    return sess_error(s, seq, COOP_EINVAL, "%s has a NUL byte: not a source file", a->file);
  struct reload_req *q = new_req(s, seq, RELOAD_ADD);
  if (q && !(q->source = strndup((const char *)a->source, a->source_len))) {
    req_free(q);
    return sess_error(s, seq, COOP_ENOMEM, "out of memory");
  }
  struct kset *ks = q ? load_set(s, seq) : NULL;
  if (!ks) return req_free(q);
  q->len = a->source_len;
  snprintf(q->file, sizeof q->file, "%s", a->file);
  int at = put_source(s, seq, ks, a->file, q->source);
  if (at < 0) return set_free(ks), req_free(q);
  const struct kdef *k = &ks->k[at];
  snprintf(q->name, sizeof q->name, "%s", k->name);
  if (owned_by(ks, s->uid) > c->max_kernels_per_author) {
    sess_error(s, seq, COOP_ELIMIT, "uid %u has %u kernels: [kernels] max_per_author allows %u",
               s->uid, owned_by(ks, s->uid) - 1, c->max_kernels_per_author);
    return set_free(ks), req_free(q);
  }
  log_info("uid %u: kernel add %s from %s (%u bytes): building", s->uid, q->name, a->file,
           a->source_len);
  start(s, seq, ks, q);
}

/* Whether a kernel `name` owned by `owner` (found: else there is none)
 * may not be removed by s's user: then the ERROR is sent. */
static int refuse_remove(struct session *s, uint32_t seq, int found, uint32_t owner,
                         const char *name) {
  const char *no = !found                      ? NULL
                   : owner == KDEF_SHIPPED     ? "is one of coopd's own kernels ([kernels] dirs)"
                   : owner != s->uid && s->uid ? "was added by another author"
                                               : NULL;
  if (found && !no) return 0;
  if (!found)
    sess_error(s, seq, COOP_ENOKERNEL, "no kernel named %s (coopctl kernels lists them)", name);
  else if (owner == KDEF_SHIPPED) /* root too: the administrator's files */
    sess_error(s, seq, COOP_EPERM,
               "kernel %s %s: remove its file from those directories and reload (SIGHUP)", name,
               no);
  else
    sess_error(s, seq, COOP_EPERM, "kernel %s %s: only its author or root may remove it", name, no);
  log_info("uid %u: kernel remove %s refused: %s", s->uid, name, found ? no : "no such kernel");
  return -1;
}

/* A stored kernel that no set holds: its source no longer loads
 * (kstore_load leaves it out, logged at each start and reload). It is
 * removed from the store alone, without a reload; before, REMOVE said
 * there was no kernel of that name, root's too, and its files stayed. */
static void remove_stored(struct session *s, uint32_t seq, const char *name) {
  char err[1400];
  if (kstore_remove(s->dm->cfg.authored_dir, name, err, sizeof err))
    return sess_error(s, seq, COOP_EIO, "kernel %s cannot be removed: %s", name, err);
  struct reload_req *q = new_req(s, seq, RELOAD_REMOVE);
  if (!q) return;
  snprintf(q->name, sizeof q->name, "%s", name);
  log_info("uid %u: kernel remove %s: stored only (its source no longer loads)", s->uid, name);
  kadd_done(s->dm, q, 0, "");
}

/* KERNEL_REMOVE: an author's own kernel; root's, any author's. */
void sess_kernel_remove(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                        unsigned nfds) {
  const char *name = msg->kernel_remove.name;
  if (may_change(s, seq, 1)) return;
  /* a kernel's name is an identifier: other bytes (a newline) went into
   * coopd's log as the author sent them, as lines coopd never wrote */
  if (!coop__is_ident(name))
    return sess_error(s, seq, COOP_EINVAL,
                      "a kernel's name is a C identifier (coopctl kernels lists them)");
  /* told at once, within the author's interval too: a name neither
   * running nor stored, or a kernel not this user's to remove, running or
   * only stored (one the running set left out, a failed build: its owner
   * is its .owner's; another author's waited out the interval to be told) */
  const struct kdef *run = s->dm->ks ? kset_find(s->dm->ks, name) : NULL;
  uint32_t owner = run ? run->owner : 0;
  int stored = run ? 0 : kstore_has(s->dm->cfg.authored_dir, name, &owner);
  if (stored >= 0 && refuse_remove(s, seq, run || stored, owner, name)) return;
  if (may_reload_now(s, seq)) return;
  struct kset *ks = load_set(s, seq);
  if (!ks) return;
  const struct kdef *k = kset_find(ks, name);
  if (!k && stored == 1) return set_free(ks), remove_stored(s, seq, name);
  if (refuse_remove(s, seq, k != NULL, k ? k->owner : 0, name)) return set_free(ks);
  struct reload_req *q = new_req(s, seq, RELOAD_REMOVE);
  if (!q) return set_free(ks);
  snprintf(q->name, sizeof q->name, "%s", name);
  log_info("uid %u: kernel remove %s (uid %u's)", s->uid, name, k->owner);
  kset_remove(ks, (unsigned)(k - ks->k));
  start(s, seq, ks, q);
}

/* RELOAD: the kernels read again and built, as on SIGHUP (the settings
 * are the admin's: they are not read again). */
void sess_reload(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                 unsigned nfds) {
  if (may_change(s, seq, 1) || may_reload_now(s, seq)) return;
  struct kset *ks = load_set(s, seq);
  struct reload_req *q = ks ? new_req(s, seq, RELOAD_KERNELS) : NULL;
  if (!q) return ks ? set_free(ks) : (void)0;
  log_info("uid %u: kernel reload", s->uid);
  start(s, seq, ks, q);
}

void kadd_done(struct daemon *dm, struct reload_req *q, int err, const char *log) {
  static const char *const what[] = {"reload", "add", "remove"};
  struct uid_use *u = q->uid && dm->cfg.author_reload_interval_ms ? uid_get(dm, q->uid) : NULL;
  if (u) {
    u->reload_next = coop__now_ns() + (int64_t)dm->cfg.author_reload_interval_ms * 1000000;
    uid_put(dm, u);
  }
  if (err)
    log_info("uid %u: kernel %s%s%s failed: %.*s", q->uid, what[q->op], q->name[0] ? " " : "",
             q->name, (int)strcspn(log, "\n"), log);
  else
    log_info("uid %u: kernel %s%s%s done", q->uid, what[q->op], q->name[0] ? " " : "", q->name);
  if (q->s) {
    union coop_msg m;
    memset(&m, 0, sizeof m);
    struct coop_msg_kernel_done *d = &m.kernel_done;
    d->error = err;
    d->nkernels = dm->ks->n;
    d->log = (const uint8_t *)(err ? log : "");
    d->log_len = (uint32_t)strnlen((const char *)d->log, COOP_WIRE_LOG_MAX);
    const struct kdef *k = q->op == RELOAD_ADD && !err ? kset_find(dm->ks, q->name) : NULL;
    if (k) d->has_kernel = 1, kdef_wire(k, &d->kernel);
    sess_send(q->s, COOP_MSG_KERNEL_DONE, q->seq, &m);
  }
  req_free(q);
}
