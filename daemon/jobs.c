/*
 * jobs.c: see jobs.h. Loop thread, but for job_admit, job_fits and
 * job_req_from_job, which the device thread calls too (they read only
 * their arguments).
 */
#include "jobs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "fdio.h"
#include "fdref.h"
#include "journal.h"
#include "log.h"

unsigned job_io_fds(struct job *j, int *fds) {
  unsigned n = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    int fd = !a->io_fd1 || !a->io_owns ? -1 : a->io_ref ? fdref_drop(a->io_ref) : a->io_fd1 - 1;
    if (fd >= 0) fds[n++] = fd;
    a->io_fd1 = 0;
    a->io_owns = 0;
    a->io_ref = NULL;
  }
  return n;
}

void job_free(struct daemon *dm, struct job *j) {
  if (!j) return;
  int io[COOP_WIRE_MAX_ARGS];
  for (unsigned i = 0, n = job_io_fds(j, io); i < n; i++) close(io[i]);
  for (unsigned i = 0; i < j->nargs; i++) {
    if (j->args[i].fd >= 0) close(j->args[i].fd);
    free(j->args[i].data);
  }
  free(j->inst);
  free(j->inst_order);
  jobpool_put(&dm->jobpool, j);
}

/* ---- admission ---- */

int job_refuse(struct job_err *e, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return e->code = code;
}

int job_has_devbufs(const struct job *j) {
  for (unsigned i = 0; i < j->nargs; i++)
    if (j->args[i].type == COOP_ARG_BUF && j->args[i].devbuf_id) return 1;
  return 0;
}

int job_fits(unsigned workers, unsigned groups, int cooperative) {
  return workers > 0 && (cooperative || groups <= workers);
}

void job_req_from_submit(struct job_req *r, const struct coop_msg_submit *m, const int *fds,
                         unsigned nfds, uint32_t pid) {
  *r = (struct job_req){.kernel = m->kernel, .flags = m->flags, .groups = m->groups};
  r->period_us = m->period_us;
  r->count = m->count;
  r->duration_ms = m->duration_ms;
  r->deadline_us = m->deadline_us;
  r->nargs = m->nargs;
  for (unsigned i = 0; i < m->nargs; i++) {
    const struct coop_wire_arg *a = &m->args[i];
    if (a->type == COOP_ARG_DEVBUF || a->type == COOP_ARG_DEVBUF_IO) { /* its size: the
                                                                        * buffer's; an io
                                                                        * range's descriptor:
                                                                        * sess_submit's */
      r->args[i] = (struct job_req_arg){COOP_ARG_BUF, 0, 0, 0, -1, 1, 1};
      continue;
    }
    int fd = a->fd == COOP_WIRE_FD_NONE ? -1 : a->fd;
    struct stat st;
    char why[96];
    int ok = 0;
    if (fd >= 0 && a->fd < nfds) { /* an OUT buffer's file is written (fdio_client_out) */
      ok = (a->dir & COOP_BUF_OUT) ? fdio_client_out(fds[a->fd], pid, &st, why, sizeof why)
                                   : fdio_client_file(fds[a->fd], pid, &st, why, sizeof why);
      ok = ok == FDIO_DISK ? FDIO_DISK : ok == 0 && (uint64_t)st.st_size >= a->size;
    }
    r->args[i] = (struct job_req_arg){a->type, a->dir, a->bits, a->size, fd, ok, 0};
  }
}

void job_req_from_job(struct job_req *r, const struct job *j) {
  /* at a start, admission reads the kernel, flags, groups and arguments */
  *r = (struct job_req){
      .kernel = j->kernel, .flags = j->flags, .groups = j->groups, .nargs = j->nargs};
  for (unsigned i = 0; i < j->nargs; i++) {
    const struct job_arg *a = &j->args[i];
    r->args[i] =
        (struct job_req_arg){a->type, a->dir, a->bits, a->size, a->fd, 1, a->devbuf_id != 0};
  }
}

/* The kernel's own rules relate scalars to buffer sizes (require.h): what
 * keeps a client's n from sending the kernel past its buffers. A reload
 * may add rules, so a job is checked again when it starts. */
static int admit_rules(const struct kdef *k, const struct job_req *r, char *why, size_t whylen) {
  uint64_t bits[COOP_WIRE_MAX_ARGS] = {0}, lens[COOP_WIRE_MAX_ARGS] = {0};
  for (unsigned i = 0; i < r->nargs; i++) {
    bits[i] = r->args[i].bits;
    lens[i] = r->args[i].type == COOP_ARG_BUF ? r->args[i].size : 0;
  }
  return kdef_admit(k, bits, lens, why, whylen);
}

/* A queued job about to start: its kernel by name in the running set (a
 * reload may have removed it or changed it), and the workers a restart
 * left. */
static int admit_start(const struct kdef *k, const struct job_req *r, unsigned workers,
                       struct job_err *e) {
  if (!k)
    return job_refuse(e, COOP_ENOKERNEL, "kernel %s is gone: the daemon reloaded its kernels",
                      r->kernel);
  int same = k->nargs == r->nargs && !!k->cooperative == !!(r->flags & COOP_SUBMIT_COOPERATIVE);
  for (unsigned i = 0; same && i < r->nargs; i++) same = k->types[i] == r->args[i].type;
  if (!same)
    return job_refuse(e, COOP_EARGS, "kernel %s changed its signature in a reload", r->kernel);
  char why[256];
  if (admit_rules(k, r, why, sizeof why)) return job_refuse(e, COOP_EARGS, "%s", why);
  if (!job_fits(workers, r->groups, k->cooperative))
    return job_refuse(e, COOP_EINVAL,
                      "asks for %u workgroups, but the device has %u workers since its restart",
                      r->groups, workers);
  return 0;
}

/* The instances a job of these settings runs at most. */
static uint64_t inst_count(uint32_t period_us, uint32_t count, uint32_t duration_ms) {
  return count ? count : period_us ? (uint64_t)duration_ms * 1000 / period_us + 1 : 1;
}

uint64_t job_inst_bytes(uint32_t period_us, uint32_t count, uint32_t duration_ms) {
  if (!period_us) return 0;
  uint64_t n = inst_count(period_us, count, duration_ms);
  return (n > COOP_WIRE_MAX_INST ? COOP_WIRE_MAX_INST : n) * sizeof(struct coop_wire_inst);
}

/* The kernel's kind, the groups and the periodic settings of a SUBMIT. */
static int admit_shape(const struct kdef *k, const struct job_req *r, unsigned workers,
                       struct job_err *e) {
  int coop = !!(r->flags & COOP_SUBMIT_COOPERATIVE);
  if (coop != k->cooperative)
    return job_refuse(e, COOP_EARGS,
                      "kernel %s is %scooperative: submit it %s the cooperative flag", k->name,
                      k->cooperative ? "" : "non-", k->cooperative ? "with" : "without");
  if ((r->flags & COOP_SUBMIT_QUERY_BARRIER) && !coop)
    return job_refuse(e, COOP_EINVAL, "the query-barrier flag is for cooperative kernels");
  if (r->groups == 0 || r->groups > workers)
    return job_refuse(e, COOP_EINVAL, "groups must be 1..%u (the workers discovery found); got %u",
                      workers, r->groups);
  if (r->period_us == 0 && (r->count || r->duration_ms))
    return job_refuse(e, COOP_EINVAL, "count and duration need a period");
  if (r->period_us && !r->count && !r->duration_ms)
    return job_refuse(e, COOP_EINVAL, "a periodic job needs a count or a duration");
  uint64_t ninst = inst_count(r->period_us, r->count, r->duration_ms);
  if (ninst > COOP_WIRE_MAX_INST)
    return job_refuse(e, COOP_EINVAL, "at most %u instances per periodic job", COOP_WIRE_MAX_INST);
  /* Between its instances a periodic job keeps what it was given (its
   * buffers' copies in the arena, a cooperative slot, the megakernel
   * awake), and only each instance is bounded (task_max_ms): a period of
   * 71 minutes and 65536 instances, detached, held them for years while
   * doing nothing (docs/daemon.md, "Periodic jobs' bounds"). */
  if (r->max_period_ms && r->period_us > (uint64_t)r->max_period_ms * 1000)
    return job_refuse(e, COOP_EINVAL,
                      "period %u us is above [jobs] max_period_ms = %u ms: submit the tasks one "
                      "by one instead",
                      r->period_us, r->max_period_ms);
  uint64_t series_ms = r->period_us * (ninst - 1) / 1000;
  if (r->max_series_ms && r->period_us && series_ms > r->max_series_ms)
    return job_refuse(e, COOP_EINVAL,
                      "%llu instances every %u us last %llu s; [jobs] max_series_ms allows %u s: "
                      "submit a shorter series (fewer instances) and then another",
                      (unsigned long long)ninst, r->period_us, (unsigned long long)series_ms / 1000,
                      r->max_series_ms / 1000);
  /* A deadline no instance can meet only adds misses to the device's
   * coop_deadline_misses_total, which the admin reads for every user
   * (2000 a second at 1 us), and puts the job first in the scheduler's
   * earliest-deadline order (docs/daemon.md, "Deadlines"). */
  if (r->deadline_us && r->deadline_us < r->min_deadline_us)
    return job_refuse(
        e, COOP_EINVAL,
        "deadline %u us is below [jobs] min_deadline_us = %u us: no instance finishes "
        "that soon after its release here (0 asks for no deadline)",
        r->deadline_us, r->min_deadline_us);
  return 0;
}

/* The arguments of a SUBMIT against the kernel's signature, and its
 * buffers: their bytes into *bytes and *inline_out. */
static int admit_args(const struct kdef *k, const struct job_req *r, struct job_err *e,
                      uint64_t *bytes, uint64_t *inline_out) {
  if (r->nargs != k->nargs)
    return job_refuse(e, COOP_EARGS, "kernel %s takes %u arguments; got %u", k->name, k->nargs,
                      r->nargs);
  for (unsigned i = 0; i < r->nargs; i++) {
    const struct job_req_arg *a = &r->args[i];
    if (a->type != k->types[i])
      return job_refuse(e, COOP_EARGS, "argument %u of %s is %s; got %s", i, k->name,
                        coop_arg_type_name(k->types[i]), coop_arg_type_name(a->type));
    if (a->type != COOP_ARG_BUF) continue;
    if (a->size == 0 || a->size > r->arena_bytes)
      return job_refuse(e, COOP_EINVAL, "buffer argument %u: size %llu not in 1..arena (%u MiB)", i,
                        (unsigned long long)a->size, (unsigned)(r->arena_bytes >> 20));
    if (a->devbuf) continue; /* on the device already, its bytes counted (bufs.c) */
    if (a->fd >= 0 && a->fd_ok == FDIO_DISK)
      return job_refuse(e, COOP_EPERM,
                        "buffer argument %u: descriptor %u is a file on a disk, " FDIO_DISK_WHY
                        "; " FDIO_DISK_DO,
                        i, (unsigned)a->fd);
    if (a->fd >= 0 && a->fd_ok != 1)
      return job_refuse(e, COOP_EINVAL,
                        "buffer argument %u: descriptor %u missing, not a regular file (memfd), or "
                        "shorter than %llu bytes",
                        i, (unsigned)a->fd, (unsigned long long)a->size);
    if (a->fd < 0 && (a->dir & COOP_BUF_OUT)) *inline_out += a->size;
    *bytes += a->size;
  }
  return 0;
}

int job_admit(const struct kdef *k, const struct job_req *r, unsigned workers, enum job_at at,
              struct job_err *e, uint64_t *bytes, uint64_t *inline_out) {
  e->code = 0;
  e->message[0] = '\0';
  if (at == JOB_AT_START) return admit_start(k, r, workers, e);
  *bytes = *inline_out = 0;
  if (!k)
    return job_refuse(e, COOP_ENOKERNEL, "no kernel named \"%s\" (coopctl kernels lists them)",
                      r->kernel);
  int c = admit_shape(k, r, workers, e);
  if (c == 0) c = admit_args(k, r, e, bytes, inline_out);
  if (c) return c;
  char why[320];
  if (admit_rules(k, r, why, sizeof why))
    return job_refuse(e, COOP_EARGS, "kernel %s: %s", k->name, why);
  return 0;
}

/* ---- the table ---- */

int job_may_see(uint32_t uid, const struct job *j) { return uid == 0 || j->uid == uid; }

uint8_t job_state_shown(const struct job *j) {
  uint8_t st = atomic_load(&j->state); /* set by the device thread */
  return st >= COOP_JOB_DONE && !j->finished ? COOP_JOB_RUNNING : st;
}

/* By the ids' table: a walk of every job was up to 20000 of every user's
 * finished jobs for each WAIT, STATUS or CANCEL, and one user's flood of
 * them, each for an id no one has, held another user's STATUS 64 ms at
 * the median (docs/faults.md, "Resources a client can exhaust"). */
static struct job *find_job(struct daemon *dm, uint64_t id) {
  for (struct job *j = dm->job_ids[id % DM_JOB_BUCKETS]; j; j = j->id_next)
    if (j->id == id) return j->doomed ? NULL : j;
  return NULL;
}

/* ENOJOB, worded the same whether no job has that id or another user's
 * does: a different answer would tell any client who runs what. */
static void no_job(struct job_err *e, uint64_t id) {
  job_refuse(e, COOP_ENOJOB,
             "no job %llu (finished jobs are kept until their client disconnects, at most "
             "max_finished_per_client; detached ones after that at most max_detached_kept_per_uid)",
             (unsigned long long)id);
}

struct job *job_lookup(struct daemon *dm, uint32_t uid, uint64_t id, struct job_err *e) {
  struct job *j = find_job(dm, id);
  const struct journal_lost *l = j ? NULL : journal_find_lost(dm->journal, id);
  if (l && uid != 0 && l->uid != uid) {
    no_job(e, id);
    return NULL;
  }
  if (l) {
    /* worded as coop_strerror's first words, which a client then need
     * not say again (coopctl printed "lost" twice) */
    job_refuse(e, COOP_ELOST,
               "the job was lost: job %llu (%s): an earlier coopd stopped before it finished; "
               "submit it again",
               (unsigned long long)id, l->kernel);
    return NULL;
  }
  if (!j || !job_may_see(uid, j)) {
    no_job(e, id);
    return NULL;
  }
  return j;
}

void jobs_link(struct daemon *dm, struct job *j) {
  j->next = dm->jobs;
  if (j->next) j->next->pprev = &j->next;
  j->pprev = &dm->jobs;
  dm->jobs = j;
  struct job **b = &dm->job_ids[j->id % DM_JOB_BUCKETS];
  j->id_next = *b;
  if (j->id_next) j->id_next->id_pprev = &j->id_next;
  j->id_pprev = b;
  *b = j;
  j->live_next = dm->live;
  if (j->live_next) j->live_next->live_pprev = &j->live_next;
  j->live_pprev = &dm->live;
  dm->live = j;
  j->waiters = NULL;
}

void jobs_finished(struct daemon *dm, struct job *j) {
  (void)dm;
  if (!j->live_pprev) return;
  *j->live_pprev = j->live_next;
  if (j->live_next) j->live_next->live_pprev = j->live_pprev;
  j->live_next = NULL;
  j->live_pprev = NULL;
}

/* O(1): each job ending once dropped the oldest finished one with two
 * walks of every job, a few microseconds per job once a client had
 * max_finished_per_client (256) of them, on the loop thread between one
 * RESULT and the next SUBMIT. */
static void unlink_job(struct daemon *dm, struct job *j) {
  (void)dm;
  *j->pprev = j->next;
  if (j->next) j->next->pprev = j->pprev;
  j->next = NULL;
  j->pprev = NULL;
  *j->id_pprev = j->id_next;
  if (j->id_next) j->id_next->id_pprev = j->id_pprev;
  j->id_next = NULL;
  j->id_pprev = NULL;
  jobs_finished(dm, j);
}

/* A finished DETACHED job whose client has gone: kept for a later WAIT. */
static int is_kept(const struct job *j) {
  return j->finished && !j->owner && (j->flags & COOP_SUBMIT_DETACHED);
}

void job_release(struct daemon *dm, struct job *j) {
  struct uid_use *u = uid_find(dm, j->uid);
  if (u) {
    u->bytes -= j->bytes;
    if (is_kept(j)) {
      u->kept--;
      dm->kept--;
    }
  }
  job_free(dm, j);
}

void job_drop(struct daemon *dm, struct job *j) {
  if (j->pins) { /* a WAIT's deferred RESULT still reads it: at its last unpin */
    j->doomed = 1;
    return;
  }
  unlink_job(dm, j);
  job_release(dm, j);
}

void job_unpin(struct daemon *dm, struct job *j) {
  if (--j->pins == 0 && j->doomed) job_drop(dm, j);
}

/* Drops the oldest `over` of u's kept jobs (fewer if it keeps fewer, or
 * some are still read by a WAIT and go at its end): how many went. Two walks
 * of the job list, not one per job dropped: a user's 16 connections of 256
 * finished detached jobs each, closed at once, held the loop 62-80 ms
 * walking it 4096 times. */
static unsigned drop_oldest(struct daemon *dm, struct uid_use *u, unsigned over, const char *why) {
  unsigned mine = 0, seen = 0, n = 0;
  for (const struct job *x = dm->jobs; x; x = x->next)
    mine += x->uid == u->uid && is_kept(x) && !x->doomed;
  if (over > mine) over = mine;
  for (struct job *x = dm->jobs, *next; x && n < over; x = next) {
    next = x->next; /* the list is newest first: the last `over` of the user's go */
    if (x->uid != u->uid || !is_kept(x) || x->doomed || seen++ < mine - over) continue;
    log_debug("job %llu (%s, uid %u): finished detached, dropped: %s reached",
              (unsigned long long)x->id, x->kernel, x->uid, why);
    job_drop(dm, x);
    n++;
  }
  return n;
}

/* The user keeping the most, where that is more than u keeps (u's own
 * otherwise). */
static struct uid_use *keeps_most(struct daemon *dm, struct uid_use *u) {
  struct uid_use *most = u;
  for (struct uid_use *v = dm->uids; v; v = v->next)
    if (v->kept > most->kept) most = v;
  return most;
}

/* The user keeps at most max_detached_kept_per_uid (its oldest go).
 * While all users' kept jobs together pass max_detached_kept, the oldest
 * of the user keeping the most go, u's own where none keeps more: users
 * at their bound filled max_detached_kept together, and another user's
 * one result was dropped as it joined. Where that user's are all read by
 * WAITs, u's own go (test pinned_keeps_leave_the_bound_in_force). A
 * victim is never touched by a user keeping no more than it (one user's
 * 1100 detached jobs once evicted a victim's result: docs/faults.md,
 * "Resources a client can exhaust", row 7). */
void jobs_keep(struct daemon *dm, struct uid_use *u, unsigned n) {
  const struct config *c = &dm->cfg;
  u->kept += n;
  dm->kept += n;
  if (u->kept > c->max_detached_kept_per_uid)
    drop_oldest(dm, u, u->kept - c->max_detached_kept_per_uid, "max_detached_kept_per_uid");
  unsigned over = dm->kept > c->max_detached_kept ? dm->kept - c->max_detached_kept : 0;
  while (over) {
    struct uid_use *most = keeps_most(dm, u);
    unsigned second = 0; /* down to the next one's count, then again */
    for (struct uid_use *v = dm->uids; v; v = v->next)
      if (v != most && v->kept > second) second = v->kept;
    unsigned take = most->kept > second ? most->kept - second : 1;
    unsigned went = drop_oldest(dm, most, take < over ? take : over, "max_detached_kept");
    /* the rest of most's are read by WAITs (counted until they go, at
     * their ends): u's own go then, as before, or the bound stopped there
     * for every user who joined while the WAITs lasted */
    if (!went && most != u) went = drop_oldest(dm, u, over, "max_detached_kept");
    if (!went) break; /* u's are read by WAITs too */
    over -= went;
  }
}

/* ---- counters and gather statistics ---- */

static void gather_sample(struct daemon *dm, int64_t g) {
  dm->gather[dm->gather_pos] = g;
  dm->gather_pos = (dm->gather_pos + 1) % DM_GATHER_SAMPLES;
  if (dm->ngather < DM_GATHER_SAMPLES) dm->ngather++;
  dm->gather_q_n = 0;
}

void jobs_count_instances(struct daemon *dm, struct job *j) {
  if (!j->period_us) return;
  /* acquire: the inst_order entries and inst[] records below it are written */
  uint32_t n = atomic_load(&j->instances_done);
  for (; j->inst_counted < n; j->inst_counted++) {
    int64_t g = j->inst[j->inst_order[j->inst_counted]].t.gather_ns;
    metrics_count_task(&dm->met, j, g);
    if (!(j->flags & COOP_SUBMIT_COOPERATIVE) && g >= 0) gather_sample(dm, g);
  }
  uint32_t misses = atomic_load(&j->misses_so_far);
  if (misses > j->misses_counted) {
    metrics_count_misses(&dm->met, j, misses - j->misses_counted);
    j->misses_counted = misses;
  }
}

void jobs_count_finished(struct daemon *dm, struct job *j) {
  uint8_t st = atomic_load(&j->state);
  dm->done += st == COOP_JOB_DONE;
  dm->cancelled += st == COOP_JOB_CANCELLED;
  dm->refused += st == COOP_JOB_REFUSED;
  dm->failed += st == COOP_JOB_FAILED;
  if (j->period_us) { /* the instances not yet counted while it ran */
    jobs_count_instances(dm, j);
    /* every instance is counted now (inst_counted == instances_done, which
     * no longer moves): the order is not read again, and a kept job must
     * hold no more than its bytes say (sess_jobs.c, keep_instances) */
    free(j->inst_order);
    j->inst_order = NULL;
    return;
  }
  metrics_count_task(&dm->met, j, j->t.gather_ns);
  metrics_count_misses(&dm->met, j, j->misses);
  if (!(j->flags & COOP_SUBMIT_COOPERATIVE) && j->t.gather_ns >= 0)
    gather_sample(dm, j->t.gather_ns);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Over the live jobs only: every user's finished ones, up to 20000 kept,
 * were walked at each STATS (three times), and one user's 4096 of them
 * with a flood of STATS held another user's STATUS 100 ms at the median
 * (docs/faults.md, "Resources a client can exhaust"). */
void jobs_stats(struct daemon *dm, struct coop_msg_stats_reply *st) {
  for (struct job *j = dm->live; j; j = j->live_next) {
    uint8_t x = job_state_shown(j);
    st->queued += x == COOP_JOB_QUEUED;
    st->running += x == COOP_JOB_RUNNING;
  }
  st->submitted = dm->submitted;
  st->done = dm->done;
  st->cancelled = dm->cancelled;
  st->refused = dm->refused;
  st->failed = dm->failed;
  st->samples = dm->ngather;
  st->gather_p50 = st->gather_p90 = st->gather_p99 = st->gather_max = -1;
  if (!dm->ngather) return;
  /* sorted once per new sample: a user's flood of STATS, each sorting
   * 1024 samples (about 50 us), held the loop (docs/daemon.md, "The
   * client's ring") */
  uint32_t n = dm->ngather;
  if (dm->gather_q_n != n) {
    int64_t v[DM_GATHER_SAMPLES];
    memcpy(v, dm->gather, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_i64);
    dm->gather_q[0] = v[(n - 1) * 50 / 100];
    dm->gather_q[1] = v[(n - 1) * 90 / 100];
    dm->gather_q[2] = v[(n - 1) * 99 / 100];
    dm->gather_q[3] = v[n - 1];
    dm->gather_q_n = n;
  }
  st->gather_p50 = dm->gather_q[0];
  st->gather_p90 = dm->gather_q[1];
  st->gather_p99 = dm->gather_q[2];
  st->gather_max = dm->gather_q[3];
}
