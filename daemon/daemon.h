/*
 * daemon.h: the state the loop thread shares between coopd's modules.
 * Everything here belongs to the loop thread (see device.h for the one
 * other thread and how jobs cross between them).
 */
#ifndef COOPD_DAEMON_H
#define COOPD_DAEMON_H

#include <stdint.h>
#include <uv.h>

#include "authors.h"
#include "priority.h"
#include "subids.h"
#include "config.h"
#include "device/device.h"
#include "jobpool.h"
#include "jobs.h"
#include "kset.h"
#include "loopspin.h"
#include "metrics.h"

#define DM_GATHER_SAMPLES 1024u

struct session;
struct reload;

/* One user's share of coopd, counted over all its connections so that
 * reconnecting escapes no limit (users.c; docs/faults.md, "Resources a
 * client can exhaust"). An entry lives while any count is non-zero. */
struct uid_use {
  uint32_t uid;
  unsigned conns; /* connections, with or without HELLO */
  unsigned live;  /* jobs queued or running, detached ones included */
  unsigned kept;  /* finished DETACHED jobs whose client has gone */
  unsigned bufs;  /* device buffers (bufs.c) */
  uint64_t bytes; /* buffer bytes of live jobs + inline bytes finished ones keep
                   * + its device buffers */
  /* its frame loops' warm windows (uid_warm_grant): what is left of its
   * share, ns (negative: owed), as of warm_at; the span of the last
   * granted (with those it overlapped); warm_refusing: the last was
   * refused (its log line said so) */
  int64_t warm_left, warm_at, warm_from, warm_to;
  int warm_refusing;
  /* an author's next kernel reload may start then (kadd.c); the entry is
   * kept until that time, whether or not the author stays connected */
  int64_t reload_next;
  /* its next MIGRATE may move a job then (sess_migrate); root: no bound */
  int64_t move_next;
  /* its jobs' ends logged at info in the window from log_from (ms), and
   * those past the bound, at debug (sess_jobs.c, log_job_end) */
  uint64_t log_from;
  unsigned log_n, log_over;
  /* its connections' socket frames and ring records answered in the
   * loop's turn `turn` (session.c, user_may): its connections share one
   * turn's bound, whatever their number */
  uint64_t turn;
  unsigned turn_used;
  struct uid_use *next;
};

/* buckets of the job ids' table (ids are consecutive: id % N spreads them) */
#define DM_JOB_BUCKETS 4096u

struct daemon {
  uv_loop_t *loop;
  struct config cfg;
  struct authors authors;     /* [kernels] authors, looked up (authors.h) */
  struct priority_rules prio; /* [limits] priority_users, looked up (priority.h) */
  struct subids subids;       /* [limits] subordinate_ids, read (subids.h) */
  struct kset *ks;            /* the running kernels (replaced by a reload) */
  struct jobpool jobpool;     /* every job's memory (jobpool.h) */
  struct reload *reload;      /* while a SIGHUP reload is in progress */
  uint32_t reloads, reload_failures;
  char reload_status[256];                 /* the last reload's outcome, for STATS */
  char settings_refused[256];              /* why the last SIGHUP kept the settings; "" */
  struct dev *devs[COOP_WIRE_MAX_DEVICES]; /* one megakernel each ([device] devices) */
  unsigned ndev, ndev_stopped;
  uint32_t dev_jobs[COOP_WIRE_MAX_DEVICES]; /* queued or running on each: for routing */
  struct journal *journal;                  /* NULL with [server] journal = off */
  int listen_fd;
  int listen_inherited; /* socket activation: systemd's socket, never unlinked */
  /* The socket file bound (server.c): its directory (-1: none held), its
   * name there, and its device and inode; the stop removes only that. */
  int sock_dir_fd;
  char sock_name[256];
  uint64_t sock_dev, sock_ino;
  uv_poll_t listen_poll;
  int listening;
  /* Out of descriptors (server.c): a spare one, given up to accept and
   * close a connection; while it cannot be had, accepting pauses. */
  int spare_fd;
  uv_timer_t accept_pause;
  uint64_t shed, shed_logged_ms; /* connections closed so; when last logged */
  struct uid_use *uids;
  unsigned kept; /* finished DETACHED jobs without a client, every user */
  struct session *sessions;
  unsigned nsessions;
  struct job *jobs; /* every job not yet freed */
  /* the same jobs by id (jobs.c, job_lookup): a WAIT, STATUS or CANCEL
   * walked every user's jobs to find one */
  struct job *job_ids[DM_JOB_BUCKETS];
  /* those not yet finished (handed back to their session): what STATS
   * counts, rather than every finished job every user keeps */
  struct job *live;
  struct dbuf *bufs;  /* every device buffer not yet freed on its device (bufs.c) */
  uint64_t next_buf;  /* the last device buffer id given out */
  uint64_t next_job;  /* the last id given out (continued from the journal) */
  uint64_t next_conn; /* the last connection serial given out (struct session) */
  uint64_t submitted, done, cancelled, refused, failed;
  int64_t gather[DM_GATHER_SAMPLES]; /* ring of recent non-cooperative gathers */
  uint32_t ngather, gather_pos;
  /* their p50, p90, p99 and max as of the last sample (jobs_stats sorts
   * them once per new sample, not once per STATS); gather_q_n: the
   * samples they were taken of (0: none yet, or a sample came since) */
  int64_t gather_q[4];
  uint32_t gather_q_n;
  struct metrics met; /* STATS_REPLY's tail (metrics.h) */
  int stopping;
  int exit_code;
  uv_signal_t sig[3];
  uv_timer_t hard_stop;
  /* the loop's turns: one each uv_run iteration, after its I/O (main.c) */
  uv_check_t turn_check;
  uint64_t turn;
  struct loopspin spin; /* after a job is queued and after a RESULT (loopspin.h) */
};

/* users.c */
struct uid_use *uid_find(struct daemon *dm, uint32_t uid);
/* The user's entry, made if need be; NULL if out of memory. */
struct uid_use *uid_get(struct daemon *dm, uint32_t uid);
/* Frees the entry once nothing is counted in it. Called at the end of
 * each operation, never inside a walk that still uses u. */
void uid_put(struct daemon *dm, struct uid_use *u);
/* May the user's frame loop have a warm window from..to (ns), armed at
 * now, with [limits] max_warm_percent_per_uid = percent? 1: yes, charged. */
int uid_warm_grant(struct uid_use *u, int64_t now, int64_t from, int64_t to, unsigned percent);

/* server.c */
int server_listen(struct daemon *dm, char *err, size_t errlen);
void server_stop_listening(struct daemon *dm);

/* reload.c */
void reload_start(struct daemon *dm);
/* A client's request to change the kernels (kadd.c), carried by the reload
 * it starts; kadd_done answers it when the reload has ended. */
enum reload_op { RELOAD_KERNELS, RELOAD_ADD, RELOAD_REMOVE };
struct reload_req {
  enum reload_op op;
  struct session *s; /* who waits for the outcome; NULL once it has gone */
  uint32_t seq, uid;
  char name[COOP_WIRE_NAME_MAX]; /* ADD, REMOVE: the kernel */
  char file[COOP_WIRE_NAME_MAX]; /* ADD: the author's name for its file */
  char *source;                  /* ADD: what the store keeps */
  size_t len;
};
/* The kernels as a reload reads them: [kernels] dirs, then the authors'
 * (kstore.h). 0, or -1 with err. */
int reload_load(struct daemon *dm, struct kset *ks, char *err, size_t errlen);
/* Starts a reload that builds ks (the caller's set, changed as req asks)
 * and, once built, makes req's change in the store. Both become the
 * reload's. 0, or -1 when one is in progress or coopd stops (ks and req
 * stay the caller's). */
int reload_request(struct daemon *dm, struct kset *ks, struct reload_req *req);
/* A session closes: a reload it waits for answers nobody. */
void reload_forget(struct daemon *dm, const struct session *s);
/* READY=1 with the last reload's outcome as STATUS= (systemd). */
void reload_notify(struct daemon *dm);
/* While a reload is in progress: what it is doing, if its new kernels
 * include `name` ("being built", "waiting for the running megakernel to
 * drain"), else NULL. For the ENOKERNEL of a kernel that is coming. */
const char *reload_brings(const struct daemon *dm, const char *name);
/* Builds (does not launch) the kernels of ks on every configured device:
 * 0, or an error with the compiler's log in err (--check-config). With
 * out, each device's width table goes there (every kernel measured alone,
 * and the one that bounds the launch). */
int reload_check_build(const struct config *c, const struct kset *ks, FILE *out, char *err,
                       size_t errlen);

/* session.c */
void session_accept(struct daemon *dm, int fd);
/* An ERROR frame (seq 0) to a connection never taken on, best effort, then
 * close(fd). */
void session_refuse(int fd, int code, const char *message);
void session_shutdown_all(struct daemon *dm);
/* The loop's look at every connection's shared ring (sess_ring.c): each
 * turn of its spin (spinning 1: coopd reads the rings), and once after
 * (0: their readers are marked asleep, then a last look). */
void session_poll_rings(struct daemon *dm, int spinning);
/* At the start of a frame's warm window (loopspin_on_window), key the
 * connection it was armed for (sess_jobs.c, sess_submit): its next
 * frame's job memory made and its last SUBMIT checked, dry. */
void session_warm_frame(struct daemon *dm, const void *key);
/* sess_jobs.c */
void session_job_done(struct daemon *dm, struct job *j);
void session_job_event(struct daemon *dm, const struct dev_event *e);
/* The two above as the device layer's hooks (dev_open), user = the daemon. */
extern const struct dev_hooks session_dev_hooks;
/* sess_info.c: what STATS answers (a client's, or metrics_http.c's /metrics),
 * as user viewer may read it (the watchdog's event: dev_watch_get);
 * SESSION_VIEWER_ANYONE for a reader who is no user in particular. */
#define SESSION_VIEWER_ANYONE (UINT32_MAX - 1)
void session_stats(struct daemon *dm, uint32_t viewer, struct coop_msg_stats_reply *st);

#endif /* COOPD_DAEMON_H */
