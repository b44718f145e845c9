/* sess_jobs.c: a client's jobs: SUBMIT, WAIT, CANCEL, STATUS, and the
 * RESULTs and events of finished jobs (session.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bufs.h"
#include "coop_util.h"
#include "fdio.h"
#include "journal.h"
#include "log.h"
#include "priority.h"
#include "session.h"

/* The job, or an ERROR sent and NULL. */
static struct job *lookup(struct session *s, uint32_t seq, uint64_t id) {
  struct job_err e;
  struct job *j = job_lookup(s->dm, s->uid, id, &e);
  if (!j) sess_error(s, seq, e.code, "%s", e.message);
  return j;
}

/* The bytes of a SUBMIT's buffers that are copied into the arena (not
 * device buffers). */
static uint64_t copy_bytes(const struct coop_msg_submit *m) {
  uint64_t n = 0;
  for (unsigned i = 0; i < m->nargs; i++)
    if (m->args[i].type == COOP_ARG_BUF) n += m->args[i].size;
  return n;
}

/* Whether want bytes of copies fit device i's arena now beside what its
 * jobs take (dev_room_taken, a hint a pass old); *left: what they would
 * leave. */
static int room_for(const struct daemon *dm, unsigned i, uint64_t want, uint64_t *left) {
  uint64_t arena = (uint64_t)dm->cfg.arena_mb << 20, taken = dev_room_taken(dm->devs[i]);
  if (taken > arena || want > arena - taken) return 0;
  *left = arena - taken - want;
  return 1;
}

/* The device a SUBMIT goes to: the one it names, or, of those with the
 * workers it asks for, one whose arena has room for its copies beside
 * what the jobs there take (dev_room_taken), the least loaded (fewest
 * jobs, then the lowest index); where none has room, the least loaded
 * (the job may wait for room there: docs/daemon.md, "Room in the arena");
 * device 0 when none has the workers (its checks then say why); or, e
 * filled, its (negative) code. */
static int pick_device(struct session *s, const struct coop_msg_submit *m, struct job_err *e) {
  struct daemon *dm = s->dm;
  if (m->device != COOP_WIRE_ANY_DEVICE) {
    if (m->device < dm->ndev) return m->device;
    return job_refuse(e, COOP_EINVAL, "no device %u: this coopd runs %u (0..%u, or any)", m->device,
                      dm->ndev, dm->ndev - 1);
  }
  int coop = !!(m->flags & COOP_SUBMIT_COOPERATIVE), best = -1, best_room = 0;
  uint64_t want = copy_bytes(m), left;
  for (unsigned i = 0; i < dm->ndev; i++) {
    unsigned w = dev_workers(dm->devs[i]);
    if (m->groups > w || !job_fits(w, m->groups, coop)) continue;
    int room = room_for(dm, i, want, &left);
    if (best < 0 || room > best_room || (room == best_room && dm->dev_jobs[i] < dm->dev_jobs[best]))
      best = (int)i, best_room = room;
  }
  return best < 0 ? 0 : best;
}

/* The last descriptor io_range looked at in one SUBMIT, and its size: a
 * frame's input and output name one memfd, which is looked at once. */
struct io_seen {
  int fd;
  uint64_t size;
  int disk; /* fdio_client_out said FDIO_DISK: no range may be written into it */
};

/* A device buffer's range moved with the job (COOP_ARG_DEVBUF_IO): inside
 * the buffer, and inside the frame's descriptor it names, a regular file.
 * 0, or (e filled) the code. */
static int io_range(struct session *s, unsigned i, const struct coop_wire_arg *a,
                    const struct dbuf *b, const int *fds, unsigned nfds, struct io_seen *seen,
                    struct job_err *e) {
  struct stat st;
  char why[96];
  if (a->at > b->size || a->size > b->size - a->at)
    return job_refuse(e, COOP_EINVAL,
                      "argument %u: bytes %llu..%llu are outside device buffer %llu (%llu bytes)",
                      i, (unsigned long long)a->at, (unsigned long long)(a->at + a->size),
                      (unsigned long long)b->id, (unsigned long long)b->size);
  if (a->fd == COOP_WIRE_FD_XFER && !s->xfer)
    return job_refuse(
        e, COOP_EINVAL,
        "argument %u: names the connection's transfer memfd, and none was sent (XFER)", i);
  int fd = sess_io_fd(s, a, fds, nfds), r;
  if (fd >= 0 && fd != seen->fd) {
    seen->fd = -1;
    /* the transfer memfd, sealed against shrinking, is at least as big as
     * XFER found it: a frame's ranges inside that need no fstat */
    int xfer = a->fd == COOP_WIRE_FD_XFER;
    if (xfer && a->size <= s->xfer_size && a->off <= s->xfer_size - a->size) {
      *seen = (struct io_seen){fd, s->xfer_size, 0};
    } else if ((r = fdio_client_out(fd, s->pid, &st, why, sizeof why)) == 0 || r == FDIO_DISK) {
      *seen = (struct io_seen){fd, (uint64_t)st.st_size, r == FDIO_DISK};
      if (xfer && s->xfer_size && seen->size > s->xfer_size) s->xfer_size = seen->size; /* grew */
    }
  }
  /* off + size may wrap: neither is trusted */
  if (fd < 0 || fd != seen->fd || a->size > seen->size || a->off > seen->size - a->size)
    return job_refuse(e, COOP_EINVAL,
                      "argument %u: descriptor %u must be a memfd of at least %llu bytes (the "
                      "range's offset %llu plus its %llu bytes)",
                      i, (unsigned)a->fd, (unsigned long long)(a->off + a->size),
                      (unsigned long long)a->off, (unsigned long long)a->size);
  if (seen->disk && (a->dir & COOP_BUF_OUT))
    return job_refuse(e, COOP_EPERM,
                      "argument %u: descriptor %u is a file on a disk, " FDIO_DISK_WHY
                      "; " FDIO_DISK_DO,
                      i, (unsigned)a->fd);
  return 0;
}

/* A SUBMIT's device buffers (COOP_ARG_DEVBUF, COOP_ARG_DEVBUF_IO) into
 * bufs[]: each the client's, all on one device, the one it names if it
 * names one, each range moved with the job inside its buffer and its
 * descriptor. Returns that device, COOP_WIRE_ANY_DEVICE when the job names
 * none and has no device buffer, or (e filled) a negative code. */
static int device_buffers(struct session *s, const struct coop_msg_submit *m, struct dbuf **bufs,
                          const int *fds, unsigned nfds, struct job_err *e) {
  int dev = m->device;
  struct io_seen seen = {-1, 0, 0};
  for (unsigned i = 0; i < m->nargs; i++) {
    const struct coop_wire_arg *a = &m->args[i];
    if (a->type != COOP_ARG_DEVBUF && a->type != COOP_ARG_DEVBUF_IO) continue;
    struct job_err le;
    bufs[i] = dbuf_lookup(s->dm, s->uid, a->bits, &le);
    if (!bufs[i]) return job_refuse(e, le.code, "argument %u: %s", i, le.message);
    if (a->type == COOP_ARG_DEVBUF_IO) {
      int r = io_range(s, i, a, bufs[i], fds, nfds, &seen, e);
      if (r) return r;
    }
    if (dev != COOP_WIRE_ANY_DEVICE && dev != bufs[i]->device)
      return job_refuse(e, COOP_EINVAL,
                        "argument %u: device buffer %llu is on device %u, the job on device %d", i,
                        (unsigned long long)bufs[i]->id, bufs[i]->device, dev);
    dev = bufs[i]->device;
  }
  if (dev != COOP_WIRE_ANY_DEVICE && dev >= (int)s->dm->ndev) return pick_device(s, m, e);
  return dev;
}

/* Checks a SUBMIT against the kernel and the device (job_admit), then
 * against the limits. Returns 0, or fills e and returns its code.
 * fds: the descriptors of this frame. */
static int check_submit(struct session *s, const struct coop_msg_submit *m, const struct kdef *k,
                        struct dev *dev, const int *fds, unsigned nfds, struct dbuf *const *bufs,
                        uint64_t *bytes, struct job_err *e) {
  struct daemon *dm = s->dm;
  struct job_req r;
  uint64_t total, inline_out;
  job_req_from_submit(&r, m, fds, nfds, s->pid);
  for (unsigned i = 0; i < m->nargs; i++)
    if (bufs[i]) r.args[i].size = bufs[i]->size;
  r.arena_bytes = (uint64_t)dm->cfg.arena_mb << 20;
  r.min_deadline_us = dm->cfg.min_deadline_us;
  r.max_period_ms = dm->cfg.max_period_ms;
  r.max_series_ms = dm->cfg.max_series_ms;
  if (job_admit(k, &r, dev_workers(dev), JOB_AT_SUBMIT, e, &total, &inline_out)) return e->code;
  /* a periodic job's instance records: up to 4 MiB that RESULT carries,
   * held like its buffers from here until the job is dropped */
  total += job_inst_bytes(m->period_us, m->count, m->duration_ms);
  if (inline_out > SESS_INLINE_OUT_MAX)
    return job_refuse(e, COOP_ETOOBIG, "inline output buffers above %u bytes: pass a memfd",
                      SESS_INLINE_OUT_MAX);
  if (s->inflight >= dm->cfg.max_jobs_per_client)
    return job_refuse(e, COOP_ELIMIT,
                      "at most %u jobs in flight per client ([limits] max_jobs_per_client)",
                      dm->cfg.max_jobs_per_client);
  if (s->bytes + total > dm->cfg.max_bytes_per_client)
    return job_refuse(e, COOP_ELIMIT,
                      "at most %llu buffer bytes in flight per client ([limits] "
                      "max_bytes_per_client; a periodic job's instance records count, %zu bytes "
                      "each)",
                      dm->cfg.max_bytes_per_client, sizeof(struct coop_wire_inst));
  const struct uid_use *u = s->use;
  if (u->live >= dm->cfg.max_jobs_per_uid)
    return job_refuse(e, COOP_ELIMIT,
                      "at most %u jobs queued or running per user, over all its connections, "
                      "detached jobs included ([limits] max_jobs_per_uid)",
                      dm->cfg.max_jobs_per_uid);
  if (u->bytes + total > dm->cfg.max_bytes_per_uid)
    return job_refuse(e, COOP_ELIMIT,
                      "at most %llu buffer bytes per user ([limits] max_bytes_per_uid): its jobs "
                      "in flight and the results kept for it (inline outputs, and %zu bytes per "
                      "instance of a periodic job) hold %llu, this job %llu more; results go when "
                      "their connection closes",
                      dm->cfg.max_bytes_per_uid, sizeof(struct coop_wire_inst),
                      (unsigned long long)u->bytes, (unsigned long long)total);
  if (m->priority < COOP_PRIORITY_MIN || m->priority > COOP_PRIORITY_MAX)
    return job_refuse(e, COOP_EINVAL, "priority %d: want %d..%d", (int)m->priority,
                      COOP_PRIORITY_MIN, COOP_PRIORITY_MAX);
  if (m->priority > (int32_t)dm->cfg.max_priority) {
    int most = priority_max(&dm->prio, dm->cfg.max_priority, s->fd, s->uid);
    if (m->priority > most)
      return job_refuse(e, COOP_EPERM,
                        "priority %d: this user may ask at most %d ([limits] max_priority, "
                        "priority_users)",
                        (int)m->priority, most);
  }
  *bytes = total;
  return 0;
}

/* Gathering ahead for a frame loop (docs/daemon.md, "Device buffers"; the
 * scheduler's holds: docs/scheduler.md, "Gathering ahead"). A periodic job
 * tells the scheduler when its next instance comes; a renderer that
 * submits one task per frame, with fresh input each time, does not. So a
 * connection's one-task jobs of one kernel, size and device, arriving at a
 * steady interval, are taken as a frame loop (cadence.h: a period, then a
 * grid that a late or skipped frame does not lose): the job carries when
 * the next is expected, and the scheduler keeps its workgroups free from
 * just before then. A wrong guess costs a lapsed hold (those workgroups
 * kept from cooperative kernels for about 1 ms); without it, every frame
 * waited for the long kernel's next resizing barrier (2.4 ms beside bfs on
 * the H100). */
#define SESS_LEAD_MAX_NS 5000000 /* the most a frame's work before its SUBMIT counts */
/* The cadence runs on the frames' starts: a frame begins at its burst's
 * first request (session.c, burst: its buffer write, before the SUBMIT),
 * or at the SUBMIT when nothing came just before it. The start is the
 * client's own clock (a vsync-paced loop); the SUBMIT's arrival is not: it
 * comes after the write, which takes 80 us with coopd's threads warm and
 * 450 with them asleep, so a grid of SUBMITs moved with the warmth it
 * was meant to bring, and the warm window began after the write had come
 * (bench/RESULTS.md, "Where a frame's write waits"). *lead: the start ->
 * SUBMIT of this frame; returns the next frame's expected start, or 0. */
static int64_t expected_next(struct session *s, const struct coop_msg_submit *m, int dev,
                             int64_t *lead) {
  int64_t start =
      cadence_frame_start(s->last_task.burst_at, coop__now_ns(), SESS_LEAD_MAX_NS, lead);
  if (m->period_us || (m->flags & COOP_SUBMIT_COOPERATIVE)) return 0;
  int same = s->last_task.groups == m->groups && s->last_task.device == dev &&
             !strcmp(s->last_task.kernel, m->kernel);
  if (same && start == s->last_task.cad.at) return s->last_task.cad.grid; /* a frame's second */
  int64_t next = cadence_arrive(&s->last_task.cad, start, same);
  snprintf(s->last_task.kernel, sizeof s->last_task.kernel, "%s", m->kernel);
  s->last_task.groups = m->groups;
  s->last_task.device = (uint8_t)dev;
  return next;
}

/* Whether an argument names a descriptor of its frame. */
static int has_fd(const struct coop_wire_arg *a) {
  return (a->type == COOP_ARG_BUF && a->fd != COOP_WIRE_FD_NONE) ||
         (a->type == COOP_ARG_DEVBUF_IO && a->fd != COOP_WIRE_FD_XFER);
}

/* What a SUBMIT's admission found: its kernel, device and device buffers,
 * the bytes it will hold, and the SUBMIT as coopd runs it (m: the frame's
 * own, or own with the kind and width it left to coopd). */
struct admission {
  const struct kdef *k;
  int dev;
  uint64_t bytes;
  struct dbuf *bufs[COOP_WIRE_MAX_ARGS];
  const struct coop_msg_submit *m;
  struct coop_msg_submit own;
};

/* The kind and width a SUBMIT left to coopd (PROTOCOL.md, "SUBMIT"):
 * OWN_KIND takes the kernel's kind, groups 0 one workgroup for a task and,
 * for a cooperative kernel, every worker of its device (set once the device
 * is known: devices may differ). Copied only where something is left, so
 * that a frame that says everything costs no copy. A kernel not found
 * keeps the frame as it came, for the refusal that names it. */
static const struct coop_msg_submit *own_kind(const struct coop_msg_submit *m, const struct kdef *k,
                                              struct admission *ad) {
  if (!k || (!(m->flags & COOP_SUBMIT_OWN_KIND) && m->groups)) return m;
  ad->own = *m;
  if (m->flags & COOP_SUBMIT_OWN_KIND)
    ad->own.flags = (uint8_t)((m->flags & ~(COOP_SUBMIT_OWN_KIND | COOP_SUBMIT_COOPERATIVE)) |
                              (k->cooperative ? COOP_SUBMIT_COOPERATIVE : 0));
  if (!m->groups && !(ad->own.flags & COOP_SUBMIT_COOPERATIVE)) ad->own.groups = 1;
  return &ad->own;
}

/* A SUBMIT's checks, before anything is made or changed: the kernel, the
 * frame's descriptors, the device buffers and the device, the limits.
 * Returns 0, or fills e and returns its code. Nothing here writes the
 * session but what it learns of its transfer memfd (io_range), so it may
 * run dry (sess_submit_warm). */
static int admit(struct session *s, const struct coop_msg_submit *m, const int *fds, unsigned nfds,
                 struct admission *ad, struct job_err *e) {
  struct daemon *dm = s->dm;
  if (dm->stopping) return job_refuse(e, COOP_ESHUTDOWN, "coopd is shutting down");
  ad->k = kset_find(dm->ks, m->kernel);
  m = ad->m = own_kind(m, ad->k, ad);
  const char *coming = ad->k ? NULL : reload_brings(dm, m->kernel);
  if (coming)
    return job_refuse(e, COOP_ENOKERNEL,
                      "kernel %s comes with the reload in progress (the new kernels are %s; "
                      "running jobs get up to [jobs] grace_ms = %u ms before the swap): submit "
                      "again once `coopctl kernels` lists it",
                      m->kernel, coming, dm->cfg.grace_ms);
  /* a buffer's descriptor is its argument's alone (the job takes it);
   * ranges moved with the job may share one (and one duplicate of it:
   * sess_make_job) */
  for (unsigned a = 0; a < m->nargs; a++)
    for (unsigned b = a + 1; ad->k && b < m->nargs; b++)
      if ((m->args[a].type == COOP_ARG_BUF || m->args[b].type == COOP_ARG_BUF) &&
          has_fd(&m->args[a]) && has_fd(&m->args[b]) && m->args[a].fd == m->args[b].fd)
        return job_refuse(e, COOP_EINVAL, "arguments %u and %u name the same descriptor", a, b);
  memset(ad->bufs, 0, sizeof ad->bufs);
  int dev = device_buffers(s, m, ad->bufs, fds, nfds, e);
  if (dev == COOP_WIRE_ANY_DEVICE) dev = pick_device(s, m, e);
  if (dev < 0) return dev;
  ad->dev = dev;
  if (m == &ad->own && !m->groups) ad->own.groups = dev_workers(dm->devs[dev]); /* cooperative */
  return check_submit(s, m, ad->k, dm->devs[dev], fds, nfds, ad->bufs, &ad->bytes, e);
}

/* A warm window from..to for job j's next frame, within its user's share
 * ([limits] max_warm_percent_per_uid, users.c)? If not, j->no_warm: the
 * frame comes cold, and the log says so once for each run of refusals. */
static int warm_granted(struct session *s, struct job *j, int64_t from, int64_t to) {
  unsigned pct = s->dm->cfg.max_warm_percent_per_uid;
  struct uid_use *u = s->use;
  if (uid_warm_grant(u, coop__now_ns(), from, to, pct)) {
    if (u->warm_refusing) log_info("uid %u: warm windows again", u->uid);
    u->warm_refusing = 0;
    return 1;
  }
  j->no_warm = 1;
  if (!u->warm_refusing)
    log_info(
        "uid %u: no warm window for job %llu's next frame: its frame loops' windows took "
        "their share of the time ([limits] max_warm_percent_per_uid = %u); its frames come "
        "cold until that share is back",
        u->uid, (unsigned long long)j->id, pct);
  u->warm_refusing = 1;
  return 0;
}

void sess_submit(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                 unsigned nfds) {
  const struct coop_msg_submit *m = &msg->submit;
  struct daemon *dm = s->dm;
  int64_t t_decoded = coopd_tracing ? coop__now_ns() : 0, t_checked = 0;
  struct admission ad;
  struct job_err e;
  if (admit(s, m, fds, nfds, &ad, &e)) return sess_error(s, seq, e.code, "%s", e.message);
  m = ad.m; /* with what it left to coopd filled in */
  if (coopd_tracing) t_checked = coop__now_ns();
  int dev = ad.dev;
  uint64_t bytes = ad.bytes;
  errno = ENOMEM;
  struct job *j = sess_make_job(s, m, ad.k, fds, bytes);
  if (!j && (errno == EMFILE || errno == ENFILE))
    return sess_error(s, seq, COOP_ELIMIT,
                      "coopd is out of file descriptors (a range's duplicate): try again later "
                      "(its administrator should raise LimitNOFILE)");
  if (!j) return sess_error(s, seq, COOP_ENOMEM, "out of memory");
  TRACE_SET(j, recv, s->rx_ns);
  TRACE_SET(j, decoded, t_decoded);
  TRACE_SET(j, checked, t_checked);
  TRACE_STAMP(j, admitted);
  TRACE_SET(j, loop_spun,
            atomic_load_explicit(&dm->spin.spinning, memory_order_relaxed) ? dm->spin.since : 0);
  j->device = (uint8_t)dev;
  j->device_named = m->device != COOP_WIRE_ANY_DEVICE;
  int64_t lead = 0, next_start = expected_next(s, m, dev, &lead);
  if (next_start) { /* the next SUBMIT: as long after its frame's start as this one */
    j->next_ns = next_start + lead;
    j->next_lead_ns = lead;
    if (s->last_task.cad.alt) j->next_alt_ns = s->last_task.cad.alt + lead;
  }
  TRACE_SET(j, expected, s->frame_next_ns); /* the last frame's guess at this SUBMIT */
  s->frame_next_ns = j->next_ns;
  if (j->next_ns)
    log_debug(
        "job %llu: the next like it expected in %.3f ms (its client's period): gathered "
        "ahead",
        (unsigned long long)j->id, (double)(j->next_ns - coop__now_ns()) / 1e6);
  dm->dev_jobs[dev]++;
  j->counted_dev = (uint8_t)dev;
  sess_own(s, j);
  jobs_link(dm, j);
  s->inflight++;
  s->bytes += bytes;
  s->use->live++;
  s->use->bytes += bytes;
  dm->submitted++;
  /* the next frame's warm window, if its user may: decided before the
   * hand-off, since the device thread opens its side from the job */
  int64_t warm_from, warm_to;
  int warm = dev_warm_window(dm->devs[j->device], j->next_ns, j->next_alt_ns, j->next_lead_ns,
                             &warm_from, &warm_to) &&
             warm_granted(s, j, warm_from, warm_to);
  /* submitted before the reply: if sending fails and closes the session,
   * its cleanup finds the job where it expects it (cancelled, freed later) */
  TRACE_STAMP(j, queued);
  dev_submit(dm->devs[j->device], j);
  /* journaled before its client learns its id (ACCEPTED), which is all a
   * lost job's report needs, and after its hand-off: the line is a
   * write(2) the device need not wait for (journal.h) */
  journal_accepted(dm->journal, j->id, j->uid, j->kernel);
  loopspin_for(&dm->spin, dev_idle_spin_ns(dm->devs[j->device])); /* its hand-back */
  if (warm) loopspin_at(&dm->spin, s, warm_from, warm_to);        /* the loop's side */
  union coop_msg r; /* the encoder reads its job only */
  memset(&r.job, 0, sizeof r.job);
  r.job.job = j->id;
  /* a loop field of the trace while the device thread runs the job: none
   * of the fields that thread writes (trace.h). Before the write: the
   * client may read ACCEPTED, and stamp c_accepted, before a stamp taken
   * after sess_send returns (a negative leg, seen on 2 cores) */
  TRACE_STAMP(j, accepted);
  sess_send(s, COOP_MSG_ACCEPTED, seq, &r);
  /* after the job's hand-off and its reply: a line on stderr is a write(2),
   * a microsecond or more that no job should wait for (j and s live on
   * until the loop's next turn, even if the send closed s) */
  log_debug("job %llu submitted: %s x%u%s on device %u, uid %u (client %u/%s)",
            (unsigned long long)j->id, j->kernel, j->groups,
            (j->flags & COOP_SUBMIT_COOPERATIVE) ? " cooperative" : "", j->device, s->uid, s->pid,
            s->name);
}

/* The connection's last SUBMIT (kept as it came: session.c, keep_submit)
 * decoded and admitted again, dry: nothing made, sent or counted. A path
 * run once a frame finds its code and data cold: on an H200 the SUBMIT's
 * decode and checks took 4.7-9.3 us at p50 at 60 fps, and 1.6-3.1 with
 * this run ahead (bench/RESULTS.md, "A frame loop's SUBMIT checked
 * ahead"). Returns admit's code (0: the frame would be admitted now), or
 * 1 when none is kept. */
int sess_submit_dry(struct session *s) {
  if (!s->warm_len) return 1;
  union coop_msg *m = malloc(sizeof *m); /* as on_frame's: the allocator's path warmed too */
  if (!m) return COOP_ENOMEM;
  struct coop_wire_hdr h;
  memcpy(&h, s->warm_frame, sizeof h);
  int e = coop_wire_decode(&h, s->warm_frame + sizeof h, m);
  if (!e) {
    struct admission ad;
    struct job_err je;
    e = admit(s, &m->submit, NULL, 0, &ad, &je);
  }
  free(m);
  return e;
}

/* A frame's job made ahead. After a frame's idle spell of 16 ms, the
 * SUBMIT's calloc of its job took 9.6 us on an H200 (bench/RESULTS.md, "A
 * warm copy engine"), 2.8 us against 1.7 back to back on 2 cores: the
 * allocator's state and the job's 3 KB cold (jobs now come from slabs of
 * their own, their pages touched ahead: jobpool.h). So when a frame's warm
 * window opens, the loop makes the job's memory for the connection it was
 * armed for and zeroes it; sess_make_job takes it. At most one a
 * connection, freed with it. The window is the connection's own (its
 * key), which a window over both of a frame loop's guesses opens up to a
 * quarter period early (cadence.h, alt): a test of the frame's due time
 * against a fixed lead, as this once was for every connection at any
 * window's start, skipped those windows. */
void session_warm_frame(struct daemon *dm, const void *key) {
  struct session *s = dm->sessions;
  while (s && s != key) s = s->next;
  if (!s || s->closing || !s->frame_next_ns) return;
  if (!s->spare)
    s->spare = jobpool_get(&dm->jobpool); /* zeroed */
  else
    memset(s->spare, 0, sizeof *s->spare); /* again: back into the cache */
  int e = sess_submit_dry(s);
  if (e != 1) /* a refusal is the next SUBMIT's to answer, if it comes */
    log_debug("client %u/%s: its last SUBMIT checked ahead of its next frame: %s", s->pid, s->name,
              e ? coop_err_name(e) : "admitted");
}

static void on_waiter_closed(uv_handle_t *h) { free(h->data); }

/* A WAIT's ETIMEDOUT: the job is still running, or still queued (or
 * suspended: docs/daemon.md, "Priority"), and then, if it waits for a
 * cooperative slot, behind how many jobs and who holds the slots
 * (docs/daemon.md, "Cooperative slots"). */
static void still_running(struct session *s, uint32_t seq, const struct job *j) {
  char why[320];
  if (j && !j->finished && dev_slot_wait(j, why, sizeof why))
    return sess_error(s, seq, COOP_ETIMEDOUT, "job %llu is %s%s", (unsigned long long)j->id,
                      atomic_load(&j->suspended) ? "" : "queued, ", why);
  if (j && !j->finished && dev_slot_cap(j, why, sizeof why))
    return sess_error(s, seq, COOP_ETIMEDOUT, "job %llu still running, %s",
                      (unsigned long long)j->id, why);
  sess_error(s, seq, COOP_ETIMEDOUT, "job %llu still running", (unsigned long long)(j ? j->id : 0));
}

static void on_wait_timer(uv_timer_t *t);
static void defer_result(struct session *s, struct waiter *w, struct job *j);

void sess_waiter_free(struct waiter *w) {
  if (w->timed)
    uv_close((uv_handle_t *)&w->timer, on_waiter_closed);
  else
    free(w);
}

void sess_wait(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
               unsigned nfds) {
  const struct coop_msg_job *m = &msg->job;
  struct job *j = lookup(s, seq, m->job);
  if (!j) return;
  if (coopd_tracing && !j->tr.wait) j->tr.wait = s->rx_ns;
  /* a finished job's RESULT now, unless the client is behind: then as it
   * reads (defer_result). Built at once, each connection of a user that
   * sent WAITs of a large finished job and read nothing took up to
   * SESS_OUT_PAUSE (8 MiB) of RESULTs in a turn of the loop: 16 of them
   * 128 MiB, every other user's requests waiting for it */
  int later = j->finished && (s->ready || sess_behind(s));
  if (j->finished && !later) return sess_send_result(s, seq, j);
  if (m->timeout_ms == 0 && !later) return still_running(s, seq, j);
  if (s->nwaiters >= SESS_MAX_WAITERS)
    return sess_error(s, seq, COOP_ELIMIT, "at most %u WAITs pending per connection",
                      SESS_MAX_WAITERS);
  struct waiter *w = calloc(1, sizeof *w);
  if (!w) return sess_error(s, seq, COOP_ENOMEM, "out of memory");
  w->s = s;
  w->job = j->id;
  w->seq = seq;
  if (later) return defer_result(s, w, j);
  if (m->timeout_ms != COOP_WAIT_FOREVER) {
    w->timed = 1;
    uv_timer_init(s->dm->loop, &w->timer);
    w->timer.data = w;
    uv_timer_start(&w->timer, on_wait_timer, m->timeout_ms, 0);
  }
  w->next = s->waiters;
  if (w->next) w->next->pprev = &w->next;
  w->pprev = &s->waiters;
  s->waiters = w;
  s->nwaiters++;
  w->j_next = j->waiters;
  if (w->j_next) w->j_next->j_pprev = &w->j_next;
  w->j_pprev = &j->waiters;
  j->waiters = w;
}

/* A RESULT left to build until the client has read the replies before it
 * (session.c, SESS_RESULT_BEHIND): built at the job's end for every
 * waiter, one job's 786 KB RESULT for 4096 WAITs on each of a user's 16
 * connections that read nothing was 1 GiB built in one turn of the loop,
 * every other user's requests waiting seconds for it. The waiter counts
 * toward SESS_MAX_WAITERS until its RESULT is built; its timer stops (its
 * job has ended). The job is pinned meanwhile: a WAIT sent before its job
 * ended is answered with its RESULT, however many jobs end after it
 * (max_finished_per_client trimmed it, and the WAIT got ENOJOB). */
static void defer_result(struct session *s, struct waiter *w, struct job *j) {
  if (w->timed) uv_timer_stop(&w->timer);
  w->j = j;
  j->pins++;
  w->next = NULL;
  w->pprev = NULL;
  if (s->ready_last)
    s->ready_last->next = w;
  else
    s->ready = w;
  s->ready_last = w;
  s->nwaiters++;
}

static int events_from(struct session *s, const struct job *j, uint32_t *from);

/* j's events from instance `from` on, left to send as the client reads
 * (events_from), in the ready list's order: the RESULTs of j's WAITs come
 * after them. A connection with SESS_MAX_WAITERS entries there already is
 * closed instead: its client reads nothing, and each entry pins a job
 * (root's subscription sees every user's). */
static void defer_events(struct session *s, struct job *j, uint32_t from) {
  if (s->nwaiters >= SESS_MAX_WAITERS) {
    log_warn("client %u/%s: %u replies and events unread: closing", s->pid, s->name, s->nwaiters);
    return sess_close(s);
  }
  struct waiter *w = calloc(1, sizeof *w);
  if (!w) {
    log_warn("client %u/%s: out of memory for its events: closing", s->pid, s->name);
    return sess_close(s);
  }
  w->s = s;
  w->job = j->id;
  w->events = 1;
  w->ev_from = from;
  defer_result(s, w, j);
}

void sess_results_ready(struct session *s) {
  struct daemon *dm = s->dm;
  while (s->ready && !s->closing && !sess_behind(s)) {
    struct waiter *w = s->ready;
    if (w->events && !events_from(s, w->j, &w->ev_from)) return; /* more as it reads */
    s->ready = w->next;
    if (!s->ready) s->ready_last = NULL;
    s->nwaiters--;
    struct job *j = w->j;
    uint32_t seq = w->seq;
    int events = w->events;
    sess_waiter_free(w);
    if (!events) sess_send_result(s, seq, j); /* may close s (the loop's test), never free j */
    job_unpin(dm, j);
  }
}

void sess_waiter_remove(struct session *s, struct waiter *w) {
  *w->pprev = w->next;
  if (w->next) w->next->pprev = w->pprev;
  w->next = NULL;
  w->pprev = NULL;
  *w->j_pprev = w->j_next;
  if (w->j_next) w->j_next->j_pprev = w->j_pprev;
  w->j_next = NULL;
  w->j_pprev = NULL;
  s->nwaiters--;
}

static void on_wait_timer(uv_timer_t *t) {
  struct waiter *w = t->data;
  sess_waiter_remove(w->s, w);
  struct job_err e;
  struct job *j = job_lookup(w->s->dm, w->s->uid, w->job, &e);
  if (j)
    still_running(w->s, w->seq, j);
  else
    sess_error(w->s, w->seq, COOP_ETIMEDOUT, "job %llu still running", (unsigned long long)w->job);
  sess_waiter_free(w);
}

void sess_cancel(struct session *s, uint32_t seq, const union coop_msg *m, int *fds,
                 unsigned nfds) {
  struct job *j = lookup(s, seq, m->job.job);
  if (!j) return;
  if (!j->finished) dev_cancel(s->dm->devs[j->device], j);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  sess_send(s, COOP_MSG_OK, seq, &r);
}

/* MIGRATE: the caller's cooperative job (root: anyone's), running or
 * waiting, to another device (docs/daemon.md, "Moving jobs between
 * devices"). OK once the move is asked; STATUS shows the device it is on. */
void sess_migrate(struct session *s, uint32_t seq, const union coop_msg *m, int *fds,
                  unsigned nfds) {
  (void)fds, (void)nfds;
  struct daemon *dm = s->dm;
  const struct coop_msg_migrate *q = &m->migrate;
  struct job *j = lookup(s, seq, q->job);
  if (!j) return;
  unsigned to = q->device, from = j->device;
  const char *why = NULL;
  if (j->finished || atomic_load(&j->state) >= COOP_JOB_DONE)
    why = "it has ended";
  else if (!(j->flags & COOP_SUBMIT_COOPERATIVE))
    why = "only a cooperative job can move (a task runs where it started)";
  else if (j->period_us)
    why = "a periodic job cannot move";
  else if (atomic_load(&j->cancel))
    why = "it is being cancelled";
  else if (job_has_devbufs(j))
    why = "its device buffers stay on their device";
  if (why)
    return sess_error(s, seq, COOP_ESTATE, "job %llu cannot move: %s", (unsigned long long)j->id,
                      why);
  if (to >= dm->ndev)
    return sess_error(s, seq, COOP_EINVAL, "no device %u: this coopd runs %u (0..%u)", to, dm->ndev,
                      dm->ndev - 1);
  if (to == from)
    return sess_error(s, seq, COOP_ESTATE, "job %llu is already on device %u",
                      (unsigned long long)j->id, to);
  /* each move copies the job's buffers off one device and onto another,
   * between other users' jobs on both: a user's loop of moves kept them
   * waiting as often as it liked */
  int64_t now = coop__now_ns();
  struct uid_use *u = s->use;
  if (s->uid != 0 && u && u->move_next > now)
    return sess_error(s, seq, COOP_EBUSY,
                      "uid %u moved a job less than %u ms ago: a user's jobs move by hand once "
                      "every %u ms at most; ask again in %lld ms",
                      s->uid, SESS_MOVE_GAP_MS, SESS_MOVE_GAP_MS,
                      (long long)((u->move_next - now + 999999) / 1000000));
  /* asked by compare and swap: its device thread may be moving it by
   * itself (a suspended job to an idle device) at this very moment */
  if (dev_migrate(dm->devs[from], j, dm->devs[to], to))
    return sess_error(s, seq, COOP_ESTATE, "job %llu is already moving to another device",
                      (unsigned long long)j->id);
  if (u) u->move_next = now + (int64_t)SESS_MOVE_GAP_MS * 1000000;
  log_info("job %llu (%s, uid %u): moving from device %u to device %u (uid %u asked)",
           (unsigned long long)j->id, j->kernel, j->uid, from, to, s->uid);
  dm->dev_jobs[j->counted_dev]--;
  dm->dev_jobs[to]++;
  j->counted_dev = (uint8_t)to;
  union coop_msg r;
  memset(&r, 0, sizeof r);
  sess_send(s, COOP_MSG_OK, seq, &r);
}

static void put_status(struct coop_wire_buf *b, const struct job *j) {
  struct coop_wire_status st;
  memset(&st, 0, sizeof st);
  st.job = j->id;
  st.state = job_state_shown(j);
  st.flags = j->flags;
  snprintf(st.kernel, sizeof st.kernel, "%s", j->kernel);
  st.groups = j->groups;
  st.uid = j->uid;
  st.pid = j->pid;
  st.instances_done = atomic_load(&j->instances_done);
  st.misses = atomic_load(&j->misses_so_far);
  st.priority = j->priority;
  st.suspended = atomic_load(&j->suspended);
  st.device = j->device;
  coop_wire_status_put(b, &st);
}

void sess_status(struct session *s, uint32_t seq, const union coop_msg *msg, int *fds,
                 unsigned nfds) {
  const struct coop_msg_job *m = &msg->job;
  struct coop_wire_buf recs;
  coop_wire_buf_init(&recs);
  union coop_msg r;
  memset(&r, 0, sizeof r);
  if (m->job) {
    struct job *j = lookup(s, seq, m->job);
    if (!j) return;
    put_status(&recs, j);
    r.status_reply.n = 1;
  } else {
    for (struct job *j = s->dm->jobs; j && r.status_reply.n < COOP_WIRE_MAX_STATUS; j = j->next)
      if (job_may_see(s->uid, j)) {
        put_status(&recs, j);
        r.status_reply.n++;
      }
  }
  r.status_reply.recs = recs.p;
  r.status_reply.recs_len = (uint32_t)recs.len;
  sess_send(s, COOP_MSG_STATUS_REPLY, seq, &r);
  coop_wire_buf_free(&recs);
}

/* A live RELEASED or GATHERED to each subscriber that may see the job.
 * One whose replies are behind (sess_behind: more than 1 MiB unread) does
 * not get it: these come unasked, as fast as the scheduler takes tasks, so
 * a subscriber that read nothing grew coopd's memory (about 100 KiB a
 * second a connection beside two periodic renders on PoCL) up to
 * SESS_MAX_OUT (64 MiB a connection). The job's STARTED and
 * FINISHED still come, with its gather time, as the client reads
 * (defer_events); the count dropped is logged when the connection closes.
 * "Unread" is queued in coopd: a large RESULT not yet written counts too. */
void session_job_event(struct daemon *dm, const struct dev_event *e) {
  for (struct session *s = dm->sessions; s; s = s->next) {
    if (s->closing || !(s->sub_mask & (1u << e->kind)) || (s->uid != 0 && s->uid != e->uid))
      continue;
    if (sess_behind(s)) {
      s->ev_dropped++;
      continue;
    }
    union coop_msg m;
    memset(&m, 0, sizeof m);
    m.event.job = e->job;
    m.event.kind = e->kind;
    m.event.state = COOP_JOB_RUNNING;
    m.event.instance = e->instance;
    m.event.t_ns = e->t_ns;
    m.event.gather_ns = e->gather_ns;
    sess_send(s, COOP_MSG_EVENT, 0, &m);
  }
}

/* STARTED and FINISHED of a finished job (RELEASED and GATHERED went out
 * live, session_job_event), one per instance, in time order, from
 * instance *from on while the client keeps up (sess_behind false; looked
 * at every 256 instances), queued and written once. 1 when every one
 * went; else *from is where to go on as the client reads (defer_events).
 * All at once, a periodic job's 40000 instances for each of one user's 14
 * subscribed connections that read nothing held every other user's
 * requests 3 s at its end, a system call an event. */
static int events_from(struct session *s, const struct job *j, uint32_t *from) {
  uint32_t n = j->period_us ? j->ninst : 1;
  for (uint32_t i = *from; i < n; i++) {
    if (i != *from && (i & 255u) == 0 && sess_behind(s)) {
      *from = i;
      sess_flush(s);
      return 0;
    }
    const struct coop_wire_times *t = j->period_us ? &j->inst[i].t : &j->t;
    uint8_t st = j->period_us ? j->inst[i].state : atomic_load(&j->state);
    int64_t when[5] = {0, t->released, t->gathered, t->started, t->finished};
    for (uint8_t kind = COOP_EV_STARTED; kind <= COOP_EV_FINISHED; kind++) {
      if (!(s->sub_mask & (1u << kind)) || (when[kind] == 0 && kind != COOP_EV_FINISHED)) continue;
      union coop_msg m;
      memset(&m, 0, sizeof m);
      m.event.job = j->id;
      m.event.kind = kind;
      m.event.state = kind == COOP_EV_FINISHED ? st : COOP_JOB_RUNNING;
      m.event.instance = i;
      m.event.t_ns = when[kind];
      m.event.gather_ns = kind >= COOP_EV_GATHERED ? t->gather_ns : -1;
      sess_queue(s, COOP_MSG_EVENT, 0, &m);
    }
  }
  *from = n;
  sess_flush(s);
  return 1;
}

void sess_own(struct session *s, struct job *j) {
  j->owner = s;
  j->s_next = NULL;
  j->s_pprev = s->jobs_tail;
  *s->jobs_tail = j;
  s->jobs_tail = &j->s_next;
}

void sess_disown(struct session *s, struct job *j) {
  *j->s_pprev = j->s_next;
  if (j->s_next)
    j->s_next->s_pprev = j->s_pprev;
  else
    s->jobs_tail = j->s_pprev;
  j->owner = NULL;
  j->s_next = NULL;
  j->s_pprev = NULL;
}

/* Drop the owner's oldest finished jobs beyond the limit. */
static void trim_finished(struct daemon *dm, struct session *s) {
  while (s->finished > dm->cfg.max_finished_per_client) {
    struct job *old = s->jobs; /* oldest first: past the few still running */
    while (old && !old->finished) old = old->s_next;
    if (!old) return;
    sess_disown(s, old);
    job_drop(dm, old);
    s->finished--;
  }
}

/* A finished periodic job's records cut to the instances it ran (one
 * cancelled early, or refused, ran fewer than its submission asked room
 * for); the bytes they keep. */
static uint64_t keep_instances(struct job *j) {
  if (!j->inst) return 0;
  if (!j->ninst) {
    free(j->inst);
    j->inst = NULL;
    return 0;
  }
  uint64_t had = job_inst_bytes(j->period_us, j->count, j->duration_ms);
  uint64_t keep = (uint64_t)j->ninst * sizeof *j->inst;
  if (keep < had) {
    struct coop_wire_inst *p = realloc(j->inst, keep);
    if (p)
      j->inst = p;
    else
      keep = had; /* it still holds them all */
  }
  return keep;
}

/* A job's end in the log: info for one that did not end done, within
 * SESS_LOG_ENDS a user (u: its entry, looked up once by the caller) per
 * SESS_LOG_ENDS_MS, then debug, and once the window has passed one info
 * line of how many went so. One user's
 * submit-and-cancel loop wrote 200 info lines a second into the journal
 * (and syslog), for every admin to read. */
#define SESS_LOG_ENDS 20
#define SESS_LOG_ENDS_MS 10000
static void log_job_end(struct daemon *dm, struct uid_use *u, const struct job *j, uint8_t st) {
  int level = st == COOP_JOB_DONE ? LOG_LV_DEBUG : LOG_LV_INFO;
  if (u && level == LOG_LV_INFO) {
    uint64_t now = uv_now(dm->loop);
    if (now - u->log_from >= SESS_LOG_ENDS_MS) {
      if (u->log_over)
        log_info("uid %u: %u more of its jobs' ends in %u s logged at debug only", j->uid,
                 u->log_over, SESS_LOG_ENDS_MS / 1000);
      u->log_from = now, u->log_n = u->log_over = 0;
    }
    if (u->log_n < SESS_LOG_ENDS)
      u->log_n++;
    else
      u->log_over++, level = LOG_LV_DEBUG;
  }
  log_msg(level, "job %llu (%s, uid %u) %s%s%s", (unsigned long long)j->id, j->kernel, j->uid,
          coop_job_state_name(st), j->message[0] ? ": " : "", j->message);
}

void session_job_done(struct daemon *dm, struct job *j) {
  uint8_t st = atomic_load(&j->state);
  dbuf_job_done(dm, j); /* its device buffers may go now */
  jobs_count_finished(dm, j);
  dm->dev_jobs[j->counted_dev]--;
  /* j->finished is set only after the sends: a session that a failed send
   * closes meanwhile then treats j as running (owner := NULL) rather than
   * freeing it under us. */
  for (struct session *s = dm->sessions; s; s = s->next) {
    if (!job_may_see(s->uid, j)) continue; /* nor has it a WAIT of j (lookup refused them) */
    if (s->sub_mask) {
      uint32_t from = 0;
      if (s->ready || sess_behind(s) || !events_from(s, j, &from)) defer_events(s, j, from);
    }
  }
  /* The waiters of j leave their lists first, oldest first (j's list is
   * newest first); then they are answered, after each session's events.
   * A failed send may close a session (and free its list), never these.
   * Found by a walk of every WAIT of the sessions that may see j, one
   * user's 61440 WAITs on an idle job cost the loop about 1 ms at each of
   * its own renders' ends: another user's STATUS waited up to 1.2 s. */
  struct waiter *mine = NULL;
  while (j->waiters) {
    struct waiter *w = j->waiters;
    sess_waiter_remove(w->s, w);
    w->next = mine;
    mine = w;
  }
  for (struct waiter *w = mine, *n; w; w = n) {
    n = w->next;
    struct session *s = w->s;
    if (s->closing != 3 && (s->ready || sess_behind(s))) {
      defer_result(s, w, j);
      continue;
    }
    if (s->closing != 3) sess_send_result(s, w->seq, j);
    sess_waiter_free(w);
  }
  for (struct session *s = dm->sessions; s; s = s->next)
    if (s->ready && job_may_see(s->uid, j)) sess_flush(s); /* WRITABLE wanted: on_io builds them */
  /* after the RESULTs, which these would hold up by a write(2) each: the
   * journal's line (a crash just before it reports the job lost to a
   * client that has its RESULT, which asks no more), and the log's, one
   * line for done, cancelled, refused or failed, with the reason if any.
   * A job that ended done is a debug line, as its submission is: at info
   * each was a write(2) on this thread right after the RESULT, and a
   * client's next SUBMIT waited for it (2 us of a 29 us round trip on an
   * H200: bench/RESULTS.md, "Where a suspension's pass goes"); a frame
   * loop's 60 jobs a second filled the journal besides. */
  journal_finished(dm->journal, j->id);
  struct uid_use *u = uid_find(dm, j->uid); /* there: the job is counted */
  log_job_end(dm, u, j, st);
  j->finished = 1;
  jobs_finished(dm, j);
  /* Its inline IN copies are not needed any more (RESULT carries OUT
   * buffers only): finished renders kept 1.58 GB of them (docs/faults.md,
   * "Resources a client can exhaust", row 9).
   * They live until here rather than until staging, because a device
   * restart stages again, from them, a job that never got a workgroup
   * (device.c). What stays, the OUT bytes and the instance records for
   * RESULT, counts toward the user's bytes (max_bytes_per_uid) for as long
   * as the job is kept: the records of finished 65536-instance renders
   * (up to 4 MiB each) were once held outside every limit. */
  uint64_t held = 0;
  for (unsigned i = 0; i < j->nargs; i++) {
    struct job_arg *a = &j->args[i];
    if (a->data && !(a->dir & COOP_BUF_OUT)) {
      free(a->data);
      a->data = NULL;
    }
    if (a->data) held += a->size;
  }
  held += keep_instances(j);
  uint64_t was = j->bytes;
  j->bytes = held;
  if (u) {
    u->live--;
    u->bytes = u->bytes - was + held;
  }
  struct session *o = j->owner;
  if (!o) {
    if (u && (j->flags & COOP_SUBMIT_DETACHED))
      jobs_keep(dm, u, 1); /* kept for a later WAIT */
    else
      job_drop(dm, j);
    uid_put(dm, u);
    return;
  }
  o->inflight--;
  o->bytes -= was;
  o->finished++;
  trim_finished(dm, o);
}

static void hook_job_done(void *user, struct job *j) { session_job_done(user, j); }
static void hook_job_event(void *user, const struct dev_event *e) { session_job_event(user, e); }
/* On a device thread: the device with the most free cooperative slots
 * (then the lowest index) other than from, with the workers j asks for
 * or at least one. */
static int hook_move_target(void *user, struct dev *from, const struct job *j, struct dev **to) {
  struct daemon *dm = user; /* devs[] and ndev do not change once devices run */
  int best = -1;
  unsigned best_free = 0;
  (void)j;
  for (unsigned i = 0; i < dm->ndev; i++) {
    unsigned f = dm->devs[i] == from ? 0 : dev_free_slots(dm->devs[i]);
    if (f > best_free) best = (int)i, best_free = f;
  }
  if (best >= 0) *to = dm->devs[best];
  return best;
}

/* On a device thread: the device other than from with the most room left
 * in its arena (then the lowest index) where j's copies of bytes fit now,
 * beside what its jobs take (dev_room_taken), and j's workgroups; those
 * bytes are counted there at once (dev_room_reserve), so that the next
 * job waiting for room does not count on them too. */
static int hook_room_target(void *user, struct dev *from, const struct job *j, uint64_t bytes,
                            struct dev **to) {
  struct daemon *dm = user; /* devs[], ndev and arena_mb do not change once devices run */
  uint64_t left, best_left = 0;
  int best = -1, coop = !!(j->flags & COOP_SUBMIT_COOPERATIVE);
  for (unsigned i = 0; i < dm->ndev; i++) {
    struct dev *d = dm->devs[i];
    if (d == from || !job_fits(dev_workers(d), j->groups, coop) || !room_for(dm, i, bytes, &left))
      continue;
    if (best < 0 || left > best_left) best = (int)i, best_left = left;
  }
  if (best < 0) return -1;
  *to = dm->devs[best];
  dev_room_reserve(*to, bytes);
  return best;
}

/* A job's hand-back is near (device.h): the loop polls until then. */
static void hook_expect_soon(void *user, int64_t ns) {
  struct daemon *dm = user;
  loopspin_for(&dm->spin, ns);
}

const struct dev_hooks session_dev_hooks = {hook_job_done, hook_job_event, hook_move_target,
                                            hook_expect_soon, hook_room_target};
