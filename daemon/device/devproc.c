/* devproc.c: the front process's side of a device process (devproc.h). */
#define _GNU_SOURCE
#include "devproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "coop_util.h"
#include "devproc_shm.h"
#include "dp_ends.h"
#include "devproc_msg.h"
#include "kset.h"
#include "log.h"
#include "xmap.h" /* XMAP_SLOTS */

/* How long a request may take before the child counts as stuck: a build
 * compiles every kernel (NVRTC or PoCL's LLVM, tens of seconds on a loaded
 * machine), a launch runs discovery, the rest only read or write the
 * mailbox. */
#define DP_BUILD_MS 600000
#define DP_LAUNCH_MS 120000
#define DP_CALL_MS 20000
/* How long the front spins on the socket for a reply before it sleeps in
 * poll: on a GPU a short task's DP_SUBMIT answers within tens of
 * microseconds, and a thread woken from poll costs about ten more (the
 * trace's finished -> seen). Not on a CPU device (PoCL), whose megakernel
 * needs the cores. */
#define DP_REPLY_SPIN_NS 200000
/* How often the front, where it spins, looks for a reply rung or not: a
 * DP_WAIT's or a waiting DP_SUBMIT's once the wait's budget has ended and
 * its spin there found none, any other's once its first spin is over
 * (call_shm) */
#define DP_LATE_NAP_NS 1000000

struct dp {
  pid_t pid;
  int fd;
  int dead;
  char death[64];
  struct dp_devinfo dev;
  int64_t spin_ns;    /* DP_REPLY_SPIN_NS on a GPU backend, else 0 (set at launch) */
  int64_t warm_until; /* dp_set_warm: every request carries it */
  /* DP_SUBMIT's or DP_WAIT's reply: when a task's end is expected
   * (CLOCK_MONOTONIC ns, from ends; 0: not known), for the wait in
   * call_shm */
  int64_t expect_at;
  struct dp_ends ends;
  void (*near_end)(void *arg); /* dp_on_near_end */
  void *near_arg;
  /* Task infos fetched by the last dp_poll (slot = id & 0xff): dp_task_info
   * answers from here until the next poll, or until the task is touched. */
  struct {
    coop_task_id id;
    uint64_t gen;
    struct coop_rt_task_info info;
  } cache[256];
  uint64_t gen;
  /* Tasks a DP_POLL or DP_WAIT reply said the child ended (its rep.a): their
   * final info, for dp_task_info and dp_task_ended past the next poll (the
   * child has released them), until the slot's next such task */
  struct {
    coop_task_id id;
    struct coop_rt_task_info info;
    int64_t t[4]; /* that reply's call (dp_last_call) */
  } ended[256];
  struct dp_req q;
  struct dp_rep r;
  /* The shared channel (devproc_shm.h): created with the first dp_set_kick,
   * used for requests without descriptors once the child mapped it. */
  struct dp_shm *shm;
  int shm_fd;
  int shm_on;
  uint32_t shm_seq;       /* the last request's req_seq */
  int64_t end_seen;       /* dp_end_seen */
  int64_t t_sent, t_back; /* the last call's request sent, its reply read (dp_last_call) */
  /* The build's widths (dp_widths): [0] the merged megakernel's, then
   * each kernel's alone where [device] kernel_widths measured them; and
   * what they say, for the backend note (start_call). */
  struct coop_rt_width widths[DP_WIDTHS_MAX];
  unsigned nwidths;
  char width_note[512];
  /* Files the child said it holds mapped (dp_copy), the oldest replaced
   * first; a copy of one goes without its descriptor. */
  struct {
    dev_t dev;
    ino_t ino;
    uint32_t owner;
    int set;
  } mapped[XMAP_SLOTS];
  unsigned mapped_next;
};

static int64_t now_ms(void) { return coop__now_ns() / 1000000; }

/* Reaps the child (after SIGKILL if asked) and records how it ended. */
static void reap(struct dp *p, int kill_it) {
  if (p->pid <= 0) return;
  if (kill_it) kill(p->pid, SIGKILL);
  int st = 0;
  pid_t w;
  do w = waitpid(p->pid, &st, 0);
  while (w < 0 && errno == EINTR);
  if (!p->death[0]) {
    if (w == p->pid && WIFSIGNALED(st))
      snprintf(p->death, sizeof p->death, "killed by signal %d", WTERMSIG(st));
    else if (w == p->pid)
      snprintf(p->death, sizeof p->death, "exited %d", WEXITSTATUS(st));
    else
      snprintf(p->death, sizeof p->death, "gone");
  }
  p->pid = -1;
}

static int lost(struct dp *p, const char *why) {
  if (!p->dead) {
    p->dead = 1;
    if (why) snprintf(p->death, sizeof p->death, "%s", why);
    reap(p, 1);
  }
  return COOP_ELOST;
}

/* A reply of n bytes received into p->r for op: its error, or the child
 * lost (gone, or a reply its op's entry does not allow: devproc_msg.c). */
static int reply(struct dp *p, uint32_t op, ssize_t n, int cut) {
  if (n <= 0) return lost(p, NULL);
  const char *why = "descriptors or too long";
  if (cut || dp_rep_check(op, &p->r, (size_t)n, &why)) {
    char death[sizeof p->death];
    snprintf(death, sizeof death, "sent a malformed reply (%s)", why);
    return lost(p, death);
  }
  if (p->r.err && (size_t)n == DP_REP_HDR) p->r.u.text[0] = '\0';
  return p->r.err;
}

/* Until when the front spins for a reply, or 0 for not at all. */
static int64_t spin_until(const struct dp *p) {
  int64_t spin_end = p->spin_ns ? coop__now_ns() + p->spin_ns : 0;
  if (spin_end && p->warm_until > spin_end) spin_end = p->warm_until; /* dp_set_warm */
  return spin_end;
}

/* The shared channel's reply, copied out of the shared pages before it is
 * checked: the child may write them at any time. */
static int shm_reply(struct dp *p, uint32_t op) {
  uint32_t n = atomic_load_explicit(&p->shm->rep_len, memory_order_relaxed);
  if (dp_shm_copy(&p->r, sizeof p->r, &p->shm->rep, n))
    return lost(p, "sent a malformed reply (its length past the shared channel)");
  return reply(p, op, (ssize_t)n, 0);
}

/* The loop woken once *wake has come (dp_on_near_end), then no more. */
static void wake_loop(struct dp *p, int64_t now, int64_t *wake) {
  if (!*wake || now < *wake) return;
  p->near_end(p->near_arg);
  *wake = 0;
}

/* A request of len bytes in p->q through the shared channel (devproc_shm.h for
 * the orders): its reply into p->r. */
static int call_shm(struct dp *p, uint32_t op, size_t len, int timeout_ms) {
  struct dp_shm *sh = p->shm;
  memcpy(&sh->req, &p->q, len);
  atomic_store_explicit(&sh->req_len, (unsigned)len, memory_order_relaxed);
  uint32_t s = ++p->shm_seq;
  atomic_store(&sh->req_seq, s); /* seq_cst: then child_asleep (the Dekker pair) */
  if (atomic_load(&sh->child_asleep) && dp_shm_ring(p->fd)) return lost(p, NULL);
  int64_t deadline = now_ms() + timeout_ms;
  /* a DP_SUBMIT whose task's end is expected (dp_submit_end), or a DP_WAIT
   * for tasks one of which is (poll_op: the earliest): asleep until
   * DP_END_LEAD_NS before it, then spinning, for at most DP_END_SPIN_MAX_NS
   * past it; a thread woken by the doorbell saw a 2 ms frame's end 30 to
   * 250 us after the device process did on an H200 (bench/RESULTS.md, "The
   * end of a frame's task, expected") */
  int64_t near = p->spin_ns && p->expect_at ? p->expect_at - DP_END_LEAD_NS : 0;
  /* and the loop woken DP_WAKE_LEAD_NS before it, once (dp_on_near_end):
   * from the spin below too, which may cover the whole of a short task */
  int64_t wake = near && p->near_end ? p->expect_at - DP_WAKE_LEAD_NS : 0;
  /* and a DP_WAIT's reply, or a DP_SUBMIT's that waits, comes at the
   * wait's budget's end at the latest (the child's own wake aside), which
   * the pass set to its next wake, a frame's window among them: this
   * thread, asleep here until the doorbell, once read such a reply 2.7 ms
   * after it was written, past its frame's SUBMIT, and of the requests of
   * 100 us or more 4.7% of DP_WAITs' replies and 11% of DP_SUBMITs' over
   * 100 us after (an H200's VM, bench/RESULTS.md, "A frame's window opened
   * ahead of a late wake"). So it also spins from DP_END_LEAD_NS before
   * that end, for at most DP_END_SPIN_MAX_NS past it, woken by its own
   * timeout whether or not the doorbell wakes it; and past that, a reply
   * later still (the child's wake late) is looked for every DP_LATE_NAP_NS
   * as well, as is that of any other request once its first spin is over */
  int64_t budget = op == DP_WAIT                           ? (int64_t)p->q.a
                   : op == DP_SUBMIT || op == DP_SUBMIT_IO ? (int64_t)p->q.b
                                                           : 0;
  int64_t due = p->spin_ns ? p->t_sent + budget : 0;
  int64_t due_near = budget && due ? due - DP_END_LEAD_NS : 0;
  if (due_near && (!near || due_near < near)) near = due_near;
  for (int64_t spin_end = spin_until(p), now; spin_end && (now = coop__now_ns()) < spin_end;) {
    if (atomic_load_explicit(&sh->rep_seq, memory_order_acquire) == s) return shm_reply(p, op);
    wake_loop(p, now, &wake);
  }
  int e = 0;
  for (;;) {
    atomic_store(&sh->front_asleep, 1); /* seq_cst: then rep_seq */
    if (atomic_load(&sh->rep_seq) == s) break;
    int64_t left = deadline - now_ms();
    if (left <= 0) {
      e = lost(p, "stopped answering (killed)");
      break;
    }
    int64_t now = coop__now_ns();
    wake_loop(p, now, &wake);
    if (near && now >= near) {
      atomic_store(&sh->front_asleep, 0); /* no doorbell while it spins */
      for (int64_t until = near + DP_END_LEAD_NS + DP_END_SPIN_MAX_NS; coop__now_ns() < until;)
        if (atomic_load_explicit(&sh->rep_seq, memory_order_acquire) == s) return shm_reply(p, op);
      /* the guess was wrong: asleep as without one, up to the wait's
       * budget's end if that is still to come */
      near = due_near > coop__now_ns() ? due_near : 0;
      continue;
    }
    struct pollfd pf = {p->fd, POLLIN, 0};
    int64_t nap = left * 1000000; /* ns; until `wake` and `near` at most */
    if (near && near - now < nap) nap = near - now;
    if (wake && wake - now < nap) nap = wake - now;
    if (due && now > due && nap > DP_LATE_NAP_NS) nap = DP_LATE_NAP_NS;
    struct timespec ts = {(time_t)(nap / 1000000000), (long)(nap % 1000000000)};
    if (ppoll(&pf, 1, &ts, NULL) <= 0) continue;
    char bell[8];
    int cut = 0;
    ssize_t n = dp_recv(p->fd, bell, sizeof bell, MSG_DONTWAIT, NULL, NULL, &cut);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n == DP_DOORBELL_LEN && !cut) continue; /* look again */
    e = lost(p, n > 0 ? "sent a malformed reply (a message where a doorbell was due)" : NULL);
    break;
  }
  atomic_store(&sh->front_asleep, 0);
  return e ? e : shm_reply(p, op);
}

/* call_fds's request through the socket (it carries descriptors, or the
 * shared channel is off). */
static int call_sock(struct dp *p, uint32_t op, size_t len, const int *fds, unsigned nfds,
                     int timeout_ms) {
  ssize_t n = dp_send(p->fd, &p->q, len, fds, nfds);
  if (n != (ssize_t)len) return lost(p, NULL);
  int cut = 0;
  int64_t deadline = now_ms() + timeout_ms;
  int64_t spin_end = spin_until(p);
  while (spin_end && coop__now_ns() < spin_end) {
    n = dp_recv(p->fd, &p->r, sizeof p->r, MSG_DONTWAIT, NULL, NULL, &cut);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n == DP_DOORBELL_LEN && !cut) continue; /* a shared-channel reply's, rung late */
    return reply(p, op, n, cut);
  }
  for (;;) {
    struct pollfd pf = {p->fd, POLLIN, 0};
    int64_t left = deadline - now_ms();
    if (left <= 0) return lost(p, "stopped answering (killed)");
    int r = poll(&pf, 1, (int)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    n = dp_recv(p->fd, &p->r, sizeof p->r, 0, NULL, NULL, &cut);
    if (n == DP_DOORBELL_LEN && !cut) continue;
    return reply(p, op, n, cut);
  }
}

/* One request (p->q, header and its op's body, with the descriptors
 * fds[0..nfds)), one reply into p->r: through the shared channel when it carries
 * no descriptors, else the socket. */
static dp_call_hook call_hook; /* dp_set_call_hook: set once, before any device thread */
static int64_t call_hook_min_ns;

void dp_set_call_hook(dp_call_hook hook, int64_t min_ns) {
  call_hook = hook;
  call_hook_min_ns = min_ns;
}

static int call_fds(struct dp *p, uint32_t op, const int *fds, unsigned nfds, int timeout_ms) {
  if (p->dead) return COOP_ELOST;
  if (nfds > DP_MAX_FDS) return COOP_EINVAL;
  p->q.op = op;
  p->q.warm_until = p->warm_until;
  size_t len = dp_req_len(&p->q);
  if (!len) return COOP_EINVAL;
  p->r.t_took = p->r.t_replied = 0; /* unknown unless a reply comes */
  p->t_sent = coop__now_ns();
  int e = nfds == 0 && p->shm_on ? call_shm(p, op, len, timeout_ms)
                                 : call_sock(p, op, len, fds, nfds, timeout_ms);
  p->t_back = coop__now_ns();
  if (call_hook && p->t_back - p->t_sent >= call_hook_min_ns) {
    int64_t t[4];
    dp_last_call(p, t);
    call_hook(dp_ops[op].name, t);
  }
  return e;
}

static int call(struct dp *p, uint32_t op, int fd, int timeout_ms) {
  return call_fds(p, op, &fd, fd >= 0 ? 1 : 0, timeout_ms);
}

/* A #line naming the kernel's file, so that the compiler's log says
 * bad.cl:LINE and not the runtime's temporary file. A path the directive
 * cannot quote safely is left out: the log then gives the assembled line. */
static void line_directive(const char *path, char *out, size_t len) {
  out[0] = '\0';
  for (const char *p = path; *p; p++)
    if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) return;
  snprintf(out, len, "#line 1 \"%s\"\n", path);
}

/* The kernels as the child reads them (devproc_child.c, do_open). */
static int sources_memfd(const struct kset *ks) {
  int fd = memfd_create("coopd-kernels", MFD_CLOEXEC);
  if (fd < 0) return -1;
  FILE *f = fdopen(dup(fd), "wb");
  if (!f) return close(fd), -1;
  for (unsigned i = 0; i < ks->n; i++) {
    char line[sizeof ks->k[i].path + 16];
    line_directive(ks->k[i].path, line, sizeof line);
    struct {
      uint32_t coop, nlen;
      uint64_t slen;
    } h = {(uint32_t)ks->k[i].cooperative, (uint32_t)strlen(ks->k[i].name),
           strlen(line) + strlen(ks->k[i].source)};
    fwrite(&h, sizeof h, 1, f);
    fwrite(ks->k[i].name, 1, h.nlen, f);
    fputs(line, f);
    fputs(ks->k[i].source, f);
  }
  if (fclose(f)) return close(fd), -1;
  return fd;
}

/* fork + exec of this very binary, by its path (/proc/self/exe would name
 * valgrind's tool under valgrind): after fork a threaded process may only
 * make async-signal-safe calls, so everything is prepared before. A
 * device process of another build is caught at DP_OPEN by the messages'
 * layout stamp. A binary replaced since coopd started (a package's
 * upgrade, a rebuild in a build tree) reads "PATH (deleted)", a file that
 * is not there: every exec failed, 127, and with it every reload, author's
 * add and device restart until coopd itself restarted. The binary coopd
 * runs is still /proc/self/exe then. */
static int spawn(struct dp *p, char *err, size_t errlen) {
  static const char gone[] = " (deleted)";
  char exe[4096]; /* not static: the device threads and reload's builder spawn at once */
  ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (el <= 0 || (size_t)el >= sizeof exe - 1 ||
      ((size_t)el >= sizeof gone && !memcmp(exe + el - (sizeof gone - 1), gone, sizeof gone - 1)))
    snprintf(exe, sizeof exe, "/proc/self/exe");
  else
    exe[el] = '\0';
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
    return snprintf(err, errlen, "socketpair: %s", strerror(errno)), COOP_EIO;
  char fdarg[16];
  snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
  char *const argv[] = {"coopd", "--device-process", fdarg, NULL};
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return snprintf(err, errlen, "fork: %s", strerror(errno)), COOP_EIO;
  }
  if (pid == 0) {
    fcntl(sv[1], F_SETFD, 0); /* the one descriptor the child keeps */
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    execv(exe, argv);
    _exit(127);
  }
  close(sv[1]);
  p->pid = pid;
  p->fd = sv[0];
  return 0;
}

/* A device process that is thrown away once it has answered (a check's
 * build, the widths' probe) is the first the kernel's OOM killer takes:
 * a build that grows without end (an author's macros) then ends there,
 * not in coopd or the device process that runs every user's jobs. Raising
 * a child's own score needs no privilege; a failure leaves it as it was. */
static void oom_first(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)pid);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, "1000", 4) != 4) { /* left as it was */
  }
  close(fd);
}

/* A failed call's words: the device process's text after the code's
 * (a build's text already says "megakernel build failed (...)", and said
 * twice it read "megakernel build failed; the compiler log says why:
 * megakernel build failed (OpenCL error -11)"). */
static void call_error(const struct dp *p, int e, char *err, size_t errlen) {
  const char *t = p->r.u.text;
  if (e == COOP_EBUILD && t[0])
    snprintf(err, errlen, "%s", t);
  else
    snprintf(err, errlen, "%s%s%s", coop_strerror(e), t[0] ? ": " : "", t);
}

/* A spawned child's DP_OPEN: the device opened, ks's kernels registered
 * and, unless widths_only, the megakernel built. */
static int open_child(struct dp *p, const struct config *c, int index, const struct kset *ks,
                      int widths_only, int build_ms, char *err, size_t errlen) {
  int sfd = sources_memfd(ks);
  if (sfd < 0)
    return snprintf(err, errlen, "memfd for the kernel sources: %s", strerror(errno)), COOP_EIO;
  struct dp_open_args *a = &p->q.u.open;
  memset(a, 0, sizeof *a);
  snprintf(a->backend, sizeof a->backend, "%s", c->backend);
  snprintf(a->platform, sizeof a->platform, "%s", c->platform);
  snprintf(a->device, sizeof a->device, "%s", c->device);
  a->platform_index = c->platform_index;
  a->device_index = index;
  a->local_size = c->local_size;
  a->launch_groups = c->max_workgroups;
  a->arena_bytes = (uint64_t)c->arena_mb << 20;
  a->device_bytes = (uint64_t)c->device_mb << 20;
  a->nkernels = ks->n;
  a->max_registers = c->max_registers;
  a->widths_only = (uint32_t)widths_only;
  a->layout = DP_LAYOUT;
  int e = call(p, DP_OPEN, sfd, build_ms);
  close(sfd);
  if (e == COOP_ELOST)
    snprintf(err, errlen, "the device process %s while building", p->death);
  else if (e)
    call_error(p, e, err, errlen);
  return e;
}

static struct dp *dp_new(void) {
  struct dp *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->fd = -1;
  p->shm_fd = -1;
  p->gen = 1; /* 0 marks no cache entry valid (dp_task_info) */
  return p;
}

/* Each kernel's width alone (coop_rt_kernel_width), into p->widths[1..]:
 * measured in a device process of its own, which builds nothing else and
 * exits. Why not in p's: a lone build is a compile of its own (as long as
 * the merged one), and a device compiler that crashes on one (PoCL's
 * work-group compiler has refused kernel sets it built otherwise) must
 * take nothing down; a failure here is widths not measured. */
static void probe_widths(struct dp *p, const struct config *c, int index, const struct kset *ks) {
  char err[512] = "out of memory";
  struct dp *q = dp_new();
  int e = q ? spawn(q, err, sizeof err) : COOP_ENOMEM;
  if (e == 0) oom_first(q->pid);
  if (e == 0) e = open_child(q, c, index, ks, 1, DP_BUILD_MS, err, sizeof err);
  if (e == 0) {
    q->q.a = 1;
    e = call(q, DP_WIDTH, -1, DP_BUILD_MS);
    if (e == COOP_ELOST)
      snprintf(err, sizeof err, "the process measuring them %s", q->death);
    else if (e)
      snprintf(err, sizeof err, "%s", coop_strerror(e));
  }
  unsigned n = e == 0 ? q->r.n : 0;
  for (unsigned i = 1; i < n && i <= ks->n; i++) p->widths[i] = q->r.u.widths[i];
  for (unsigned i = n ? n : 1; i <= ks->n && i < DP_WIDTHS_MAX; i++) {
    memset(&p->widths[i], 0, sizeof p->widths[i]);
    snprintf(p->widths[i].name, sizeof p->widths[i].name, "%s", ks->k[i - 1].name);
    snprintf(p->widths[i].note, sizeof p->widths[i].note, "%.120s", err);
  }
  p->nwidths = ks->n + 1 < DP_WIDTHS_MAX ? ks->n + 1 : DP_WIDTHS_MAX;
  if (q && q->pid > 0)
    dp_close(q, DP_CLOSE_MS);
  else
    free(q);
}

/* The widths in the log, one line each, and the kernel that bounds the
 * launch; with the kernels measured alone, a summary for the backend note
 * (what `coopctl stats` shows). */
static void report_widths(struct dp *p, int index, const struct config *c) {
  char t[512], dev[32] = "device"; /* index -1: the first usable */
  if (index >= 0) snprintf(dev, sizeof dev, "device index %d", index);
  log_info("%s: megakernel width: %s", dev, coop_rt_width_text(&p->widths[0], t, sizeof t));
  if (c->max_registers && c->max_registers != CONFIG_MAX_REGISTERS &&
      strcmp(p->dev.backend, "cuda"))
    log_info("%s: [device] max_registers = %u is ignored: %s has no register cap", dev,
             c->max_registers, p->dev.backend);
  if (p->nwidths <= 1) {
    log_info("%s: each kernel's width: coopd --check-config, or [device] kernel_widths = yes", dev);
    return;
  }
  size_t n = 0;
  n += (size_t)snprintf(p->width_note, sizeof p->width_note, "widths alone:");
  for (unsigned i = 1; i < p->nwidths; i++) {
    const struct coop_rt_width *w = &p->widths[i];
    log_info("%s: kernel %s alone: %s", dev, w->name, coop_rt_width_text(w, t, sizeof t));
    if (n >= sizeof p->width_note) continue;
    if (!w->measured)
      n += (size_t)snprintf(p->width_note + n, sizeof p->width_note - n, " %s n/a,", w->name);
    else if (w->per_cu >= 0)
      n += (size_t)snprintf(p->width_note + n, sizeof p->width_note - n, " %s %dr %d/SM,", w->name,
                            w->regs, w->per_cu);
    else
      n += (size_t)snprintf(p->width_note + n, sizeof p->width_note - n,
                            " %s %dB local %dB private,", w->name, w->shared_bytes, w->local_bytes);
  }
  if (n < sizeof p->width_note) p->width_note[n - 1] = '\0'; /* the last comma */
  int b = coop_rt_width_bound(&p->widths[1], (int)p->nwidths - 1);
  const struct coop_rt_width *m = &p->widths[0];
  if (b < 0) {
    snprintf(t, sizeof t, "no kernel's occupancy is known (%s gives none): no bound named",
             p->dev.backend);
  } else {
    const struct coop_rt_width *k = &p->widths[1 + b];
    size_t tn = (size_t)snprintf(
        t, sizeof t, "bound by kernel %s (%s: %d blocks/SM alone, %d registers/thread)%s", k->name,
        k->bound, k->per_cu, k->regs,
        m->measured && m->per_cu >= 0 && m->per_cu < k->per_cu
            ? "; the merged megakernel holds fewer than any kernel alone"
            : "");
    for (unsigned i = 1; i < p->nwidths && tn < sizeof t; i++)
      if ((int)i != 1 + b && coop_rt_width_as_wide(&p->widths[i], k))
        tn += (size_t)snprintf(t + tn, sizeof t - tn, "%s %s",
                               strstr(t, "; as wide:") ? "," : "; as wide:", p->widths[i].name);
  }
  log_info("%s: %s", dev, t);
  n = strlen(p->width_note);
  snprintf(p->width_note + n, sizeof p->width_note - n, "; %s", t);
}

int dp_build(struct dp **pp, const struct config *c, int index, const struct kset *ks, char *err,
             size_t errlen) {
  *pp = NULL;
  struct dp *p = dp_new();
  if (!p) return snprintf(err, errlen, "out of memory"), COOP_ENOMEM;
  int e = spawn(p, err, errlen);
  if (e) return free(p), e;
  e = open_child(p, c, index, ks, 0, DP_BUILD_MS, err, errlen);
  if (e) {
    dp_close(p, DP_CLOSE_MS);
    return e;
  }
  p->dev = p->r.u.dev;
  /* the merged megakernel's width: read from the build, no compile */
  p->q.a = 0;
  e = call(p, DP_WIDTH, -1, DP_CALL_MS);
  if (e == COOP_ELOST) {
    snprintf(err, errlen, "the device process %s after building", p->death);
    dp_close(p, DP_CLOSE_MS);
    return e;
  }
  if (e == 0) p->widths[0] = p->r.u.widths[0];
  p->nwidths = 1;
  if (c->kernel_widths) probe_widths(p, c, index, ks);
  report_widths(p, index, c);
  *pp = p;
  return 0;
}

int dp_check(const struct config *c, int index, const struct kset *ks, unsigned build_ms, char *err,
             size_t errlen) {
  struct dp *p = dp_new();
  if (!p) return snprintf(err, errlen, "out of memory"), COOP_ENOMEM;
  int e = spawn(p, err, errlen);
  if (e) return free(p), e;
  oom_first(p->pid);
  int ms = build_ms && build_ms < DP_BUILD_MS ? (int)build_ms : DP_BUILD_MS;
  int64_t t0 = now_ms();
  e = open_child(p, c, index, ks, 0, ms, err, errlen);
  if (e == COOP_ELOST && now_ms() - t0 >= ms)
    snprintf(err, errlen, "the build took more than %d ms ([kernels] author_build_ms): stopped",
             ms);
  dp_close(p, DP_CLOSE_MS);
  return e;
}

unsigned dp_widths(const struct dp *p, struct coop_rt_width *out, unsigned max) {
  unsigned n = p->nwidths < max ? p->nwidths : max;
  memcpy(out, p->widths, n * sizeof *out);
  return n;
}

/* DP_LAUNCH and DP_UNPARK: the megakernel (re)started, and its devinfo. */
static int start_call(struct dp *p, uint32_t op, const char *during, char *err, size_t errlen) {
  int e = call(p, op, -1, DP_LAUNCH_MS);
  if (e == COOP_ELOST)
    snprintf(err, errlen, "the device process %s during the %s", p->death, during);
  else if (e)
    call_error(p, e, err, errlen);
  else
    p->dev = p->r.u.dev;
  if (e == 0 && p->width_note[0]) { /* the widths' summary, for `coopctl stats` */
    size_t n = strlen(p->dev.note);
    snprintf(p->dev.note + n, sizeof p->dev.note - n, "; %s", p->width_note);
  }
  if (e == 0) p->spin_ns = dp_backend_spins(p->dev.backend) ? DP_REPLY_SPIN_NS : 0;
  return e;
}

int dp_launch(struct dp *p, char *err, size_t errlen) {
  return start_call(p, DP_LAUNCH, "launch", err, errlen);
}

int dp_park(struct dp *p) { return call(p, DP_PARK, -1, DP_PARK_MS); }

int dp_unpark(struct dp *p, char *err, size_t errlen) {
  return start_call(p, DP_UNPARK, "relaunch", err, errlen);
}

int dp_next_build(struct dp *p, const struct kset *ks, char *err, size_t errlen) {
  int sfd = sources_memfd(ks);
  if (sfd < 0)
    return snprintf(err, errlen, "memfd for the kernel sources: %s", strerror(errno)), COOP_EIO;
  p->q.a = ks->n;
  int e = call(p, DP_NEXT_BUILD, sfd, DP_CALL_MS);
  close(sfd);
  if (e) call_error(p, e, err, errlen);
  return e;
}

int dp_next_poll(struct dp *p, char *err, size_t errlen) {
  int e = call(p, DP_NEXT_POLL, -1, DP_CALL_MS);
  if (e == COOP_ELOST)
    snprintf(err, errlen, "the device process %s while building", p->death);
  else if (e)
    snprintf(err, errlen, "%s", p->r.u.text[0] ? p->r.u.text : coop_strerror(e));
  return e ? e : (int)p->r.n;
}

int dp_next_swap(struct dp *p, const struct config *c, int index, const struct kset *ks, char *err,
                 size_t errlen) {
  p->width_note[0] = '\0'; /* the old build's: the new one's follow */
  int e = start_call(p, DP_NEXT_SWAP, "swap of the kernel set", err, errlen);
  if (e) return e;
  p->q.a = 0;
  if (call(p, DP_WIDTH, -1, DP_CALL_MS) != 0) return 0; /* the width unknown: said nowhere */
  p->widths[0] = p->r.u.widths[0];
  p->nwidths = 1;
  if (c->kernel_widths) probe_widths(p, c, index, ks);
  report_widths(p, index, c);
  if (p->width_note[0]) { /* as start_call adds it at a launch */
    size_t n = strlen(p->dev.note);
    snprintf(p->dev.note + n, sizeof p->dev.note - n, "; %s", p->width_note);
  }
  return 0;
}

void dp_next_drop(struct dp *p) {
  if (p && !p->dead) call(p, DP_NEXT_DROP, -1, DP_BUILD_MS);
}

static void dp_free(struct dp *p) {
  if (p->fd >= 0) close(p->fd);
  if (p->shm_fd >= 0) close(p->shm_fd);
  dp_shm_unmap(p->shm);
  free(p);
}

int dp_close(struct dp *p, unsigned wait_ms) {
  if (!p) return 0;
  int killed = 0;
  if (!p->dead) {
    killed = call(p, DP_CLOSE, -1, (int)wait_ms) == COOP_ELOST;
    if (!killed) reap(p, 0);
  }
  dp_free(p);
  return killed;
}

void dp_kill(struct dp *p) {
  if (!p) return;
  lost(p, "killed");
  dp_free(p);
}

int dp_alive(const struct dp *p) { return p && !p->dead; }
const char *dp_death(const struct dp *p) { return p->death; }
const char *dp_device_name(const struct dp *p) { return p->dev.name; }
const char *dp_backend(const struct dp *p) { return p->dev.backend; }
const char *dp_backend_note(const struct dp *p) { return p->dev.note; }
unsigned dp_compute_units(const struct dp *p) { return p->dev.cus; }
unsigned dp_workers(const struct dp *p) { return p->dev.workers; }

/* The descriptors of b[] as one SCM_RIGHTS array, b's fd fields rewritten
 * to index it. */
static unsigned pack_fds(const struct dp_buf *b, unsigned n, struct dp_bufs *q, int *fds) {
  unsigned nfds = 0;
  q->n = n;
  for (unsigned i = 0; i < n; i++) {
    q->b[i].size = b[i].size;
    q->b[i].arg = b[i].arg;
    q->b[i].off = b[i].off;
    q->b[i].in = (uint8_t)b[i].in;
    q->b[i].out = (uint8_t)b[i].out;
    q->b[i].at = b[i].at;
    q->b[i].keep = (uint8_t)b[i].keep;
    q->b[i].owner = b[i].owner;
    q->b[i].fd = -1;
    if (b[i].share) {
      q->b[i].fd = DP_FD_SHARE;
      q->b[i].at = b[i].share;
    }
    if (b[i].zero) q->b[i].fd = DP_FD_ZERO;
    if (b[i].fd < 0 || b[i].share) continue;
    unsigned k = 0;
    while (k < nfds && fds[k] != b[i].fd) k++;
    if (k == nfds) fds[nfds++] = b[i].fd;
    q->b[i].fd = (int32_t)k;
  }
  return nfds;
}

int dp_stage(struct dp *p, struct dp_buf *b, unsigned n) {
  if (n > DP_MAX_BUFS) return COOP_EINVAL;
  int fds[DP_MAX_FDS];
  unsigned nfds = pack_fds(b, n, &p->q.u.bufs, fds);
  int e = call_fds(p, DP_STAGE, fds, nfds, DP_CALL_MS);
  if (e == 0 && p->r.n != n) return lost(p, "sent a malformed reply (args)");
  for (unsigned i = 0; e == 0 && i < n; i++) b[i].arg = p->r.u.args[i];
  return e;
}

static void forget(struct dp *p, coop_task_id id);

int dp_unstage(struct dp *p, const struct dp_buf *b, unsigned n, coop_task_id release,
               int *breach) {
  if (n > DP_MAX_BUFS) return COOP_EINVAL;
  int fds[DP_MAX_FDS];
  unsigned nfds = pack_fds(b, n, &p->q.u.bufs, fds);
  if (release) forget(p, release);
  p->q.id = release; /* q is reused: 0 says none */
  int e = call_fds(p, DP_UNSTAGE, fds, nfds, DP_CALL_MS);
  *breach = e == COOP_ELOST ? -1 : (int)p->r.n - 1;
  return e;
}

static int mapped_find(const struct dp *p, const struct dp_buf *b) {
  for (unsigned i = 0; i < XMAP_SLOTS; i++)
    if (p->mapped[i].set && p->mapped[i].dev == b->devno && p->mapped[i].ino == b->ino &&
        p->mapped[i].owner == b->owner)
      return (int)i;
  return -1;
}

/* A file the child holds mapped (its reply's n) is named by its identity
 * next time, without its descriptor: the request then goes by the shared
 * channel, where a descriptor goes only by the socket (18 us a request
 * against 2, back to back on an H200: docs/daemon.md, "Device buffers").
 * Where the child has let it go (a park clears its mappings), it copies
 * nothing and says so, and the descriptor goes after all. The identity is
 * the caller's when it has looked before (b->ino), else looked up here
 * and left in b for its next copy through the same descriptor. */
int dp_copy(struct dp *p, struct dp_buf *b, int in) {
  uint32_t op = in ? DP_WRITE : DP_READ;
  int fds[DP_MAX_FDS];
  struct stat st;
  if (b->fd >= 0 && !b->share && !b->ino && fstat(b->fd, &st) == 0) {
    b->ino = (uint64_t)st.st_ino;
    b->devno = (uint64_t)st.st_dev;
  }
  int named = b->fd >= 0 && !b->share && b->ino;
  int k = named ? mapped_find(p, b) : -1;
  if (k >= 0) {
    struct dp_buf x = *b;
    x.fd = -1;
    pack_fds(&x, 1, &p->q.u.bufs, fds);
    p->q.u.bufs.b[0].fd = DP_FD_PINNED;
    p->q.a = b->devno;
    p->q.b = b->ino;
    int e = call_fds(p, op, fds, 0, DP_CALL_MS);
    p->q.a = p->q.b = 0; /* q is reused */
    if (e || p->r.n) return e;
    p->mapped[k].set = 0;
  }
  unsigned nfds = pack_fds(b, 1, &p->q.u.bufs, fds);
  int e = call_fds(p, op, fds, nfds, DP_CALL_MS);
  if (e == 0 && named && p->r.n && mapped_find(p, b) < 0) {
    unsigned i = p->mapped_next++ % XMAP_SLOTS;
    p->mapped[i].dev = b->devno;
    p->mapped[i].ino = b->ino;
    p->mapped[i].owner = b->owner;
    p->mapped[i].set = 1;
  }
  return e;
}

int dp_dup(struct dp *p, uint64_t to, const struct dp_buf *b, unsigned n, int *breach) {
  if (n == 0 || n > DP_MAX_BUFS) return COOP_EINVAL;
  int fds[DP_MAX_FDS];
  pack_fds(b, n, &p->q.u.bufs, fds); /* no descriptors: every fd is -1 */
  p->q.a = to;
  int e = call_fds(p, DP_DUP, fds, 0, DP_CALL_MS);
  *breach = e ? -1 : (int)p->r.n - 1;
  return e;
}

static void forget(struct dp *p, coop_task_id id) { p->cache[id & 0xffu].gen = 0; }

int dp_io_mapped(const struct dp *p, uint64_t devno, uint64_t ino, uint32_t owner) {
  struct dp_buf b = {.devno = devno, .ino = ino, .owner = owner};
  return ino && mapped_find(p, &b) >= 0;
}

/* DP_SUBMIT_IO's body: io's ranges, all of the file of io->b[0], packed
 * as any request's buffers (no descriptor travels: every fd is -1). */
static void pack_io(struct dp_submit_io *s, const struct dp_io *io) {
  struct dp_bufs b;
  int fds[DP_MAX_FDS];
  pack_fds(io->b, io->n, &b, fds);
  s->n = io->n;
  s->dev = io->b[0].devno;
  s->ino = io->b[0].ino;
  memcpy(s->b, b.b, io->n * sizeof *b.b);
}

int dp_submit_io(struct dp *p, const struct coop_rt_task_desc *d, int64_t wait_ns, uint64_t devbufs,
                 struct dp_io *io, coop_task_id *id, int *ended, int *breach,
                 struct coop_rt_task_info *info) {
  if (io && (io->n == 0 || io->n > DP_MAX_BUFS)) return COOP_EINVAL;
  if (io) {
    p->q.u.sio.desc = *d;
    pack_io(&p->q.u.sio, io);
    io->unmapped = io->out_done = 0;
  } else {
    p->q.u.desc = *d;
  }
  if (wait_ns < 0) wait_ns = 0;
  if (wait_ns > 900000000) wait_ns = 900000000;
  p->q.b = (uint64_t)wait_ns;
  p->q.a = devbufs;
  p->q.id = ended != NULL;
  int64_t t_call = coop__now_ns(), expect = dp_ends_expect(&p->ends, d->kernel, d->groups);
  p->expect_at = wait_ns && expect ? t_call + expect : 0;
  int e = call(p, io ? DP_SUBMIT_IO : DP_SUBMIT, -1, DP_CALL_MS + (int)(wait_ns / 1000000));
  p->expect_at = 0;
  if (e == 0 && io && (p->r.n & DP_IO_UNMAPPED)) { /* nothing submitted */
    p->q.a = p->q.b = 0;
    p->q.id = 0;
    io->unmapped = 1;
    return 0;
  }
  if (e == 0 && io) io->out_done = (p->r.n & DP_IO_OUT) != 0;
  p->q.a = p->q.b = 0; /* q is reused */
  p->q.id = 0;
  if (e == 0) { /* its due, for a later DP_WAIT; its run, if it ended */
    dp_ends_submitted(&p->ends, (coop_task_id)p->r.a, d->kernel, d->groups, t_call, 0);
    dp_ends_seen(&p->ends, (coop_task_id)p->r.a, &p->r.u.info);
  }
  if (ended) {
    *ended = e == 0 && (p->r.n & DP_ENDED);
    *breach = *ended ? (int)(p->r.n >> 8) - 1 : -1;
    if (*ended) *info = p->r.u.info;
  }
  p->end_seen = e == 0 && p->r.seen_after ? p->r.u.info.t_submitted + p->r.seen_after : 0;
  if (e) return e;
  *id = (coop_task_id)p->r.a;
  unsigned slot = *id & 0xffu; /* the info that came with it: no DP_INFO next */
  p->cache[slot].id = *id;
  p->cache[slot].gen = p->gen;
  p->cache[slot].info = p->r.u.info;
  return 0;
}

size_t dp_submit_io_dry(const struct dp *p, const struct coop_rt_task_desc *d,
                        const struct dp_io *io) {
  if (!io || io->n == 0 || io->n > DP_MAX_BUFS) return 0;
  struct dp_req q; /* 1-2 KiB of this thread's stack, as a call's own */
  q.op = DP_SUBMIT_IO;
  q.u.sio.desc = *d;
  pack_io(&q.u.sio, io);
  (void)dp_ends_expect(&p->ends, d->kernel, d->groups);
  return dp_req_len(&q);
}

int64_t dp_end_seen(const struct dp *p) { return p->end_seen; }

void dp_last_call(const struct dp *p, int64_t t[4]) {
  t[0] = p->t_sent;
  t[1] = p->r.t_took;
  t[2] = p->r.t_replied;
  t[3] = p->t_back;
}

int dp_backend_spins(const char *backend) {
  /* tests only: every spin on a CPU device too, so that CI runs the
   * spinning sides of the shared channel (docs/daemon.md, "Spinning") */
  if (getenv("COOP_TEST_SPIN_ANY")) return 1;
  return backend && !strcmp(backend, "cuda");
}

int dp_submit_end(struct dp *p, const struct coop_rt_task_desc *d, int64_t wait_ns,
                  uint64_t devbufs, coop_task_id *id, int *ended, int *breach,
                  struct coop_rt_task_info *info) {
  return dp_submit_io(p, d, wait_ns, devbufs, NULL, id, ended, breach, info);
}

int dp_submit(struct dp *p, const struct coop_rt_task_desc *d, int64_t wait_ns, coop_task_id *id) {
  return dp_submit_end(p, d, wait_ns, 0, id, NULL, NULL, NULL);
}

/* DP_POLL or DP_WAIT: the infos of ids[0..n) into the cache. */
static int poll_op(struct dp *p, uint32_t op, const coop_task_id *ids, unsigned n,
                   int64_t budget_ns, int spin) {
  p->gen++;
  unsigned at = 0;
  do {
    unsigned k = n - at < DP_POLL_MAX ? n - at : DP_POLL_MAX;
    p->q.u.poll.n = k;
    p->q.a = (uint64_t)budget_ns;
    p->q.b = (uint64_t)spin;
    memcpy(p->q.u.poll.id, ids + at, k * sizeof *ids);
    int frame;
    p->expect_at = op == DP_WAIT ? dp_ends_due(&p->ends, ids + at, k, &frame) : 0;
    int e = call(p, op, -1, DP_CALL_MS + (int)(budget_ns / 1000000));
    p->expect_at = 0;
    p->q.b = 0; /* q is reused */
    if (e) return e;
    if (p->r.n != k) return lost(p, "sent a malformed reply (infos)");
    const struct coop_rt_task_info *ti = p->r.u.infos;
    for (unsigned i = 0; i < k; i++) {
      unsigned slot = ids[at + i] & 0xffu;
      p->cache[slot].id = ids[at + i];
      p->cache[slot].gen = p->gen;
      p->cache[slot].info = ti[i];
      dp_ends_seen(&p->ends, ids[at + i], &ti[i]);
      if (i < 64 && ((p->r.a >> i) & 1u)) {
        p->ended[slot].id = ids[at + i];
        p->ended[slot].info = ti[i];
        dp_last_call(p, p->ended[slot].t);
      }
    }
    at += k;
    op = DP_POLL; /* a wait covers the first DP_POLL_MAX; the rest are read */
  } while (at < n);
  return 0;
}

int dp_poll(struct dp *p, const coop_task_id *ids, unsigned n) {
  return n ? poll_op(p, DP_POLL, ids, n, 0, 0) : 0;
}

int dp_wait(struct dp *p, const coop_task_id *ids, unsigned n, int64_t budget_ns, int spin) {
  if (budget_ns < 0) budget_ns = 0;
  if (budget_ns > 900000000) budget_ns = 900000000;
  return poll_op(p, DP_WAIT, ids, n, budget_ns, spin);
}

void dp_set_warm(struct dp *p, int64_t until) { p->warm_until = until; }

int dp_wake(struct dp *p) {
  if (p->dead) return COOP_ELOST;
  if (p->shm_on) { /* no reply waited for: the child's wake-up, 100-500 us
                    * on a VM, is not this thread's (devproc_shm.h) */
    atomic_store(&p->shm->warm_until, (long long)p->warm_until); /* seq_cst: then child_asleep */
    if (atomic_load(&p->shm->child_asleep) && dp_shm_ring(p->fd)) return lost(p, NULL);
    return 0;
  }
  p->q.u.poll.n = 0; /* the socket: an empty request, its reply waited for */
  p->q.a = 0;
  p->q.b = 0;
  int e = call(p, DP_POLL, -1, DP_CALL_MS);
  if (e == 0 && p->r.n != 0) return lost(p, "sent a malformed reply (infos)");
  return e;
}

/* The shared channel handed to the child (DP_SHM): from then on, requests
 * without descriptors go through it. Without one (no memfd, or the child
 * could not map it) the socket carries everything, as before. */
static int shm_start(struct dp *p) {
  if (p->shm_on) return 0;
  if (!p->shm && (p->shm_fd = dp_shm_create(&p->shm)) < 0) {
    p->shm = NULL;
    log_warn("the device process's shared channel: %s: requests go by the socket", strerror(errno));
    return 0;
  }
  int e = call(p, DP_SHM, p->shm_fd, DP_CALL_MS);
  p->shm_on = e == 0 && p->r.n == 1;
  if (e == 0 && !p->shm_on)
    log_warn("the device process could not map its shared channel: requests go by the socket");
  return e == COOP_ELOST ? e : 0;
}

void dp_on_near_end(struct dp *p, void (*fn)(void *arg), void *arg) {
  p->near_end = fn;
  p->near_arg = arg;
}

int dp_set_kick(struct dp *p, int fd, int64_t idle_spin_ns) {
  p->q.a = (uint64_t)idle_spin_ns;
  int e = call(p, DP_KICKFD, fd, DP_CALL_MS);
  return e ? e : shm_start(p);
}

int dp_task_info(struct dp *p, coop_task_id id, struct coop_rt_task_info *info) {
  unsigned slot = id & 0xffu;
  if (p->ended[slot].id == id && id) { /* the child forgot it */
    *info = p->ended[slot].info;
    return 0;
  }
  if (p->cache[slot].gen == p->gen && p->gen && p->cache[slot].id == id &&
      p->cache[slot].info.t_submitted) {
    *info = p->cache[slot].info;
    return 0;
  }
  p->q.id = id;
  int e = call(p, DP_INFO, -1, DP_CALL_MS);
  if (e == 0) *info = p->r.u.info;
  return e;
}

int dp_task_ended(const struct dp *p, coop_task_id id, int64_t t[4]) {
  if (!id || p->ended[id & 0xffu].id != id) return 0;
  if (t) memcpy(t, p->ended[id & 0xffu].t, sizeof p->ended[0].t);
  return 1;
}

int dp_task_live(struct dp *p, coop_task_id id, struct coop_rt_live *l) {
  p->q.id = id;
  int e = call(p, DP_LIVE, -1, DP_CALL_MS);
  if (e == 0) *l = p->r.u.live;
  return e;
}

int dp_cancel(struct dp *p, coop_task_id id) {
  forget(p, id);
  p->q.id = id;
  return call(p, DP_CANCEL, -1, DP_CALL_MS);
}

int dp_suspend(struct dp *p, coop_task_id id) {
  p->q.id = id;
  return call(p, DP_SUSPEND, -1, DP_CALL_MS);
}

int dp_saved(struct dp *p, coop_task_id id, int fd) {
  p->q.id = id;
  return call(p, DP_SAVED, fd, DP_CALL_MS);
}

int dp_resume(struct dp *p, const struct coop_rt_task_desc *d, int fd, coop_task_id *id) {
  p->q.u.desc = *d;
  int e = call(p, DP_RESUME, fd, DP_CALL_MS);
  if (e == 0) *id = (coop_task_id)p->r.a;
  return e;
}

int dp_prepare(struct dp *p, uint64_t bytes, unsigned nbufs, char *err, size_t errlen) {
  p->q.a = bytes;
  p->q.b = nbufs;
  int e = call(p, DP_PREPARE, -1, DP_LAUNCH_MS);
  if (e == COOP_ELOST)
    snprintf(err, errlen, "the device process %s while it prepared its arena", p->death);
  else if (e)
    call_error(p, e, err, errlen);
  return e;
}

int dp_share(struct dp *p, uint64_t bytes, struct coop_rt_share *h, uint64_t *addr) {
  p->q.a = bytes;
  int e = call(p, DP_SHARE, -1, DP_CALL_MS);
  if (e == 0) *h = p->r.u.share;
  if (e == 0) *addr = p->r.a;
  return e;
}

int dp_share_open(struct dp *p, const struct coop_rt_share *h, uint64_t *addr) {
  p->q.u.share = *h;
  int e = call(p, DP_SHARE_OPEN, -1, DP_CALL_MS);
  if (e == 0) *addr = p->r.a;
  return e;
}

int dp_share_free(struct dp *p, uint64_t addr) {
  p->q.a = addr;
  return call(p, DP_SHARE_FREE, -1, DP_CALL_MS);
}

int dp_cap(struct dp *p, coop_task_id id, unsigned cap) {
  p->q.id = id;
  p->q.a = cap;
  return call(p, DP_CAP, -1, DP_CALL_MS);
}

int dp_task_release(struct dp *p, coop_task_id id) {
  forget(p, id);
  p->q.id = id;
  return call(p, DP_RELEASE, -1, DP_CALL_MS);
}

int dp_view(struct dp *p, coop_task_id *owner, uint8_t *reserved, unsigned n) {
  p->q.a = n;
  int e = call(p, DP_VIEW, -1, DP_CALL_MS);
  if (e) return e;
  unsigned got = p->r.n < n ? p->r.n : n;
  memcpy(owner, p->r.u.view, got * sizeof *owner);
  memcpy(reserved, p->r.u.view + (size_t)p->r.n * sizeof *owner, got);
  return (int)got;
}
