/*
 * coop.h: libcoop, the client library of coopd (protocol/PROTOCOL.md).
 *
 * coopd owns an accelerator that runs a persistent megakernel; clients
 * submit cooperative kernels (long-running, blocking algorithms that give
 * up workgroups on request) and non-cooperative tasks (short, possibly
 * periodic "graphics-like" work). A task's gather time is how long it
 * waited for its workgroups.
 *
 * libcoop is synchronous: every call sends one request and blocks until
 * its reply (or a timeout). A connection may be shared by several threads;
 * their requests are in flight together and each reply goes to the call
 * that sent its request (matched by sequence number).
 *
 * Errors: functions return 0 (or a count) on success and a negative code
 * of coop_errno.h otherwise; coop_strerror() and coop_err_name() describe
 * a code. When the daemon answered with an ERROR frame its explanation is
 * kept, see coop_errmsg().
 *
 *   coop_conn *c;
 *   int e = coop_connect(&c, NULL, "myapp");
 *   coop_job *j = coop_job_new("render", 4);
 *   coop_job_buf_in(j, a, sizeof a);
 *   coop_job_buf_out(j, out, sizeof out);
 *   coop_job_u32(j, 48);
 *   uint64_t id;
 *   e = coop_submit(c, j, &id);
 *   coop_job_free(j);
 *   struct coop_result r;
 *   e = coop_wait(c, id, -1, &r);   // out[] now holds the job's output
 *   coop_result_free(&r);
 *   coop_disconnect(c);
 */
#ifndef COOP_H
#define COOP_H

#include <stddef.h>
#include <stdint.h>

#include "coop_errno.h"
#include "coop_limits.h" /* COOP_NAME_MAX, COOP_TEXT_MAX, COOP_MAX_ARGS, ... */
#include "coop_stats.h"  /* struct coop_stats, struct coop_metrics */

#ifdef __cplusplus
extern "C" {
#endif

#define COOP_ANY_DEVICE (-1) /* coop_job_device: the least loaded */

/* The state of a job (a task, or a periodic series of instances). */
enum coop_state {
  COOP_STATE_QUEUED = 1, /* accepted, waiting for workgroups or its period */
  COOP_STATE_RUNNING = 2,
  COOP_STATE_DONE = 3,
  COOP_STATE_CANCELLED = 4,
  COOP_STATE_REFUSED = 5, /* invalid for this device or kernel: see the error */
  COOP_STATE_FAILED = 6   /* the daemon could not run or finish it */
};

/* Kernel argument types, as coop_kernels() lists them. */
enum coop_type {
  COOP_TYPE_U32 = 1,
  COOP_TYPE_I32 = 2,
  COOP_TYPE_U64 = 3,
  COOP_TYPE_I64 = 4,
  COOP_TYPE_F32 = 5,
  COOP_TYPE_F64 = 6,
  COOP_TYPE_BUF = 7
};

/* Event kinds; subscribe to a kind with the mask bit COOP_EVENT_BIT(kind). */
enum coop_event_type {
  COOP_EVENT_RELEASED = 1, /* the scheduler took the task (instance) */
  COOP_EVENT_GATHERED = 2, /* its workgroups are gathered */
  COOP_EVENT_STARTED = 3,
  COOP_EVENT_FINISHED = 4 /* done, cancelled or refused: see state */
};
#define COOP_EVENT_BIT(kind) (1u << (kind))
#define COOP_EVENTS_ALL 0x1eu

typedef struct coop_conn coop_conn;
typedef struct coop_job coop_job;

/* What the daemon said in its WELCOME. */
struct coop_info {
  unsigned version; /* the protocol version in use */
  char daemon_version[COOP_NAME_MAX];
  char backend[COOP_NAME_MAX]; /* "opencl", ... */
  char device[COOP_TEXT_MAX];
  uint32_t compute_units;
  uint32_t workers;     /* worker workgroups: a job's groups must be 1..workers, or 0 */
  uint32_t max_payload; /* largest frame payload, bytes */
  uint32_t inline_max;  /* largest buffer sent inside a frame; larger go by memfd */
  uint32_t uid, pid;    /* this client, as the daemon sees it */
  uint32_t ndevices;    /* devices with a megakernel; the fields above are device 0's */
};

/* Timestamps of one task or instance: ns of the daemon's CLOCK_MONOTONIC
 * (0 = did not happen). gather_ns and exec_ns come from the device clock
 * (-1 = not measured). */
struct coop_times {
  int64_t submitted, released, gathered, started, finished;
  int64_t gather_ns, exec_ns;
};

struct coop_instance {
  int state; /* enum coop_state */
  struct coop_times t;
};

/* A finished job (coop_wait). Release with coop_result_free(). */
struct coop_result {
  uint64_t job;
  int state;                        /* enum coop_state */
  int device;                       /* the device it ran on */
  int error;                        /* why it was refused or failed; 0 when done */
  char message[COOP_TEXT_MAX];      /* the daemon's explanation of error */
  struct coop_times t;              /* the task, or the whole periodic job */
  uint32_t m_initial, m_min, m_max; /* cooperative: workgroup counts M seen */
  uint32_t kills, forks, resizes;
  uint32_t instances, misses; /* periodic: instances run, deadline misses */
  uint32_t ninst;             /* periodic: records in inst */
  struct coop_instance *inst; /* periodic: one per instance, release order */
};

/* One job as coop_status() reports it. */
struct coop_job_status {
  uint64_t job;
  int state; /* enum coop_state */
  int cooperative, query_barrier;
  char kernel[COOP_NAME_MAX];
  uint32_t groups, uid, pid;
  uint32_t instances_done, misses;
  int32_t priority; /* coop_job_priority */
  int suspended;   /* 1 while a running cooperative job is suspended (docs/daemon.md, "Priority") */
  uint32_t device; /* where it is now: a cooperative job may move (coop_migrate) */
};

/* A registered kernel (coop_kernels). */
struct coop_kernel {
  char name[COOP_NAME_MAX];
  int cooperative;
  unsigned nargs;
  int types[COOP_MAX_ARGS]; /* enum coop_type */
};

/* What a worker workgroup of the megakernel is doing (coop_top). */
enum coop_worker_state {
  COOP_WORKER_FREE = 0,     /* idle, available to the scheduler */
  COOP_WORKER_RUNNING = 1,  /* runs a workgroup of job */
  COOP_WORKER_RESERVED = 2, /* taken back from cooperative job, kept for its forks */
  COOP_WORKER_OTHER = 3     /* running or reserved for a job this client may not see */
};

/* One worker workgroup (coop_top). */
struct coop_wg {
  int state;    /* enum coop_worker_state */
  uint64_t job; /* RUNNING, RESERVED: the job; FREE, OTHER: 0 */
};

/* A running job as coop_top() shows it. */
struct coop_topjob {
  uint64_t job;
  char kernel[COOP_NAME_MAX];
  int cooperative;
  uint32_t groups;  /* N, the workgroups it asked for */
  uint32_t m;       /* cooperative: its active count M now; otherwise groups */
  uint32_t workers; /* the worker workgroups it holds now (running or reserved) */
  uint32_t kills, forks;
  int32_t priority; /* coop_job_priority */
};

struct coop_event {
  uint64_t job;
  int kind;          /* enum coop_event_type */
  int state;         /* enum coop_state */
  uint32_t instance; /* periodic jobs: which instance; else 0 */
  int64_t t_ns;      /* when, on the daemon's CLOCK_MONOTONIC */
  int64_t gather_ns; /* -1 before the workgroups are gathered */
};
typedef void (*coop_event_fn)(const struct coop_event *ev, void *user);

/* ---- connection ---- */

/* The socket path a connect would use: path if non-NULL, else $COOP_SOCKET
 * if set and non-empty, else $XDG_RUNTIME_DIR/coop.sock where a socket is
 * there (a user's own coopd; never for root), else the system's
 * /run/coop/coop.sock.
 * 0, or COOP_EINVAL if it does not fit in buf (len bytes). */
int coop_socket_path(const char *path, char *buf, size_t len);

/* Connects to coopd (path as coop_socket_path() resolves it) and performs
 * the HELLO/WELCOME handshake; name (NULL: "libcoop") identifies the client
 * in the daemon's log. On success *out is the connection; otherwise *out is
 * NULL and the result is COOP_ECONN (no daemon there), COOP_EUNTRUSTED (see
 * below), COOP_EVERSION (it speaks another protocol version), COOP_ECLOSED,
 * COOP_ETIMEDOUT, ...; coop_errmsg(NULL) then says more.
 *
 * Before sending anything it asks the kernel which user listens on the
 * socket (SO_PEERCRED) and goes on only for root, the caller's own uid, or
 * coopd's service user: $COOP_SERVER_USER (a user name or a uid), else
 * "coop", the user the installed service runs as. Anyone else, who could
 * have put a server at the path (a directory above it writable by them),
 * would receive the jobs' data: COOP_EUNTRUSTED, and the message names
 * the server's uid. $COOP_TRUST_ANY_SERVER=1 skips the check. The owner of
 * the socket file proves nothing: whoever put a server there owns it. */
int coop_connect(coop_conn **out, const char *path, const char *name);

/* Closes the connection. Jobs still running are cancelled by the daemon;
 * buffers of unwaited jobs are not written back. NULL is ignored. */
void coop_disconnect(coop_conn *c);

/* The daemon's WELCOME, valid until coop_disconnect(). */
const struct coop_info *coop_info(const coop_conn *c);

/* How long a request other than coop_wait() waits for its reply, and how
 * much longer than its own timeout coop_wait() waits for the daemon's
 * answer; ms, negative = forever. The default is 30000. */
void coop_set_timeout(coop_conn *c, int timeout_ms);

/* How long a thread waiting for a reply (coop_wait()'s RESULT, any
 * request's answer) watches the connection's shared ring and its socket
 * before it sleeps in poll, us; 0
 * (the default, or the environment's COOP_SPIN_US at coop_connect()) never
 * spins. A reply that comes within the spin reaches the caller several
 * microseconds sooner than one that wakes a sleeping thread, at the cost
 * of a CPU core busy for up to that long each wait: worth it for tasks
 * of tens of microseconds (bench/RESULTS.md). At most 1000000.
 * coop_connect() asks coopd for the shared ring (PROTOCOL.md, "The shared
 * ring"), through which small requests and replies pass without a system
 * call while both sides watch; the environment's COOP_RING=0 keeps every
 * frame on the socket. */
void coop_set_spin(coop_conn *c, unsigned spin_us);

/* The message that came with the last error returned to this thread by
 * libcoop: the daemon's ERROR text, or what the library found (for
 * instance the path it could not connect to); "" when there is none. c may
 * be NULL (after a failed coop_connect). Valid until the next libcoop call
 * on this thread. */
const char *coop_errmsg(const coop_conn *c);

/* ---- job descriptions ---- */

/* A new description of a job running `kernel` on `groups` workgroups, or
 * with groups 0 the kernel's own width: every worker of the device it runs
 * on for a cooperative kernel, one workgroup for a task. It runs as the
 * kernel's own kind (cooperative or not, as coop_kernels lists it) and
 * once, until changed. NULL when out of memory.
 * The setters below return 0 or a negative code; the first error is also
 * kept and returned by coop_submit(), so their results may be ignored. */
coop_job *coop_job_new(const char *kernel, uint32_t groups);
void coop_job_free(coop_job *j);

/* on 1: a cooperative kernel, 0: a task; either must match the kernel's
 * kind (else the SUBMIT fails with COOP_EARGS). -1 (the default): the
 * kernel's own kind, taken by coopd when it admits the job. */
int coop_job_cooperative(coop_job *j, int on);
/* Cooperative kernels: the query variant of the resizing barrier. */
int coop_job_query_barrier(coop_job *j, int on);
/* The groups given to coop_job_new, changed (N or K; 0: the kernel's own
 * width, as for coop_job_new). */
int coop_job_groups(coop_job *j, uint32_t groups);
/* The job outlives this connection: it is not cancelled when the client
 * disconnects, and any connection of the same user may wait for it. */
int coop_job_detached(coop_job *j, int on);
/* The device to run on: 0..ndevices-1 (coop_info), where the job stays, or
 * COOP_ANY_DEVICE (the default): the least loaded one with enough workers,
 * of those whose arena has room for the job's buffers now; coopd may move
 * such a job to another device while it waits (suspended, or for room). */
int coop_job_device(coop_job *j, int device);
/* The job's priority: 0 by default; lower ones (down to COOP_PRIORITY_MIN)
 * for anyone, higher ones up to what coopd allows the user ([limits]
 * max_priority, priority_users; else the SUBMIT fails with COOP_EPERM). A
 * job of higher priority that cannot get its workers (or its room in the
 * arena) has lower-priority cooperative jobs suspended until it ends
 * (docs/daemon.md, "Priority").
 * COOP_PRIORITY_MIN..COOP_PRIORITY_MAX (coop_limits.h). */
int coop_job_priority(coop_job *j, int priority);
/* A periodic job: one instance released every period_us until `count`
 * instances (0 = no limit) or `duration_ms` (0 = no limit), at least one of
 * them non-zero, and at most COOP_MAX_INSTANCES instances; an instance finishing later than its
 * release plus deadline_us (0 = none) counts as a miss; coopd refuses a deadline below its
 * [jobs] min_deadline_us (COOP_EINVAL at submit). period_us = 0 makes the job a single task
 * again. */
int coop_job_periodic(coop_job *j, uint32_t period_us, uint32_t count, uint32_t duration_ms,
                      uint32_t deadline_us);

/* Scalar arguments, appended in the kernel's argument order. */
int coop_job_u32(coop_job *j, uint32_t v);
int coop_job_i32(coop_job *j, int32_t v);
int coop_job_u64(coop_job *j, uint64_t v);
int coop_job_i64(coop_job *j, int64_t v);
int coop_job_f32(coop_job *j, float v);
int coop_job_f64(coop_job *j, double v);

/* Buffer arguments of size > 0 bytes in the caller's memory. IN data is
 * copied when the job is submitted. OUT and INOUT memory must stay valid
 * until coop_wait() returns the job's result on the connection that
 * submitted it: the job's output is written there when it ends DONE (and
 * is left untouched otherwise). A buffer too large to go inline travels
 * in a memfd, whose all-zero pages are left as holes: zeros cost nothing
 * to send. */
int coop_job_buf_in(coop_job *j, const void *data, size_t size);
int coop_job_buf_out(coop_job *j, void *mem, size_t size);
int coop_job_buf_inout(coop_job *j, void *mem, size_t size);
/* A buffer argument held in the caller's memfd (or other regular file of at
 * least size bytes, of tmpfs or a local disk: coopd refuses one of FUSE or
 * a network filesystem, and, while it runs as root, a disk's file it would
 * write, COOP_EPERM: PROTOCOL.md), dir COOP_JOB_IN, COOP_JOB_OUT or COOP_JOB_INOUT: the
 * descriptor is passed to the daemon as it is and nothing is copied on the
 * client's side (the other setters copy into a memfd of libcoop's). The
 * daemon reads the input from it when the job starts and writes the
 * output into it when the job ends DONE, so a caller that maps the memfd
 * must leave its bytes [0, size) alone until coop_wait() returns the job's
 * result. fd stays the caller's (libcoop sends a duplicate). */
#define COOP_JOB_IN 1u
#define COOP_JOB_OUT 2u
#define COOP_JOB_INOUT 3u
int coop_job_buf_fd(coop_job *j, int fd, size_t size, unsigned dir);
/* A device buffer (coop_buffer_create) as the next argument: nothing is
 * copied; the kernel reads and writes the buffer in place. The job runs on
 * the buffer's device (naming another with coop_job_device is an error at
 * submit). */
int coop_job_buffer(coop_job *j, uint64_t buffer);
/* A device buffer as the next argument, as coop_job_buffer, with bytes
 * offset..offset+len of it moved by the job itself: `in` (NULL: none)
 * written there before the job's first task starts, and the same range
 * read into `out` (NULL: none) after its last task, when coop_wait()
 * returns the job DONE (otherwise `out` is left alone). A frame's input
 * and output then cross with its SUBMIT and its RESULT instead of a
 * coop_buffer_write and a coop_buffer_read of their own: two round trips
 * to the daemon fewer. `in` is copied at coop_submit(); `out` must stay
 * valid until coop_wait() returns. The bytes travel in the connection's
 * transfer memfd, which the job holds until its RESULT is received: a
 * job submitted meanwhile (or a coop_buffer_write) uses a fresh memfd,
 * which costs its pages. */
int coop_job_buffer_io(coop_job *j, uint64_t buffer, size_t offset, const void *in, void *out,
                       size_t len);
/* As coop_job_buffer_io, the bytes in the caller's own memfd (or other
 * regular file), as coop_job_buf_fd's: with COOP_JOB_IN, bytes
 * fd_off..fd_off+len of fd written into the buffer at offset before the
 * job's first task; with COOP_JOB_OUT, that range of the buffer written
 * into fd at fd_off after its last task if it ends DONE. Nothing is
 * copied in this process: a frame produced in the memfd's mapping and read
 * from it costs no copy on the client's side. Leave the range alone until
 * coop_wait() returns. Seal the memfd against shrinking (memfd_create
 * with MFD_ALLOW_SEALING, then F_ADD_SEALS F_SEAL_SHRINK): coopd's device
 * process then maps and pins it once and the copy engine reads and writes
 * its pages; an unsealed file is read and written through a bounce
 * buffer. fd stays the caller's (libcoop sends a duplicate); the file it
 * names is looked at here, once: keep fd on the same file until the
 * submit. For both
 * setters, the memfd that two jobs in a row move ranges through (a frame
 * loop's) is handed to coopd once as the connection's transfer memfd
 * (XFER), which it keeps open until the connection closes or another
 * replaces it; later jobs name it, and their SUBMIT, carrying no
 * descriptor, may go by the shared ring. */
int coop_job_buffer_io_fd(coop_job *j, uint64_t buffer, size_t offset, int fd, size_t fd_off,
                          size_t len, unsigned dir);

/* ---- device buffers ----
 * Memory that stays on a device between jobs (PROTOCOL.md, "Device
 * buffers"): upload a graph once, then run any number of jobs on it. A
 * buffer is its creator's uid's alone (another user's id reads as
 * COOP_ENOJOB); its bytes count toward the user's [limits]
 * max_bytes_per_uid. It is freed by coop_buffer_free, or when the
 * connection that created it closes, unless created with
 * COOP_BUFFER_KEEP: then any connection of the same user may use and free
 * it. A write or a read runs as soon as the daemon takes it, beside any
 * job: wait for the jobs using a buffer before reading their output from
 * it. A job submitted after a write returned sees the bytes written. When
 * the daemon's device process is replaced (a crash or a kernel reload),
 * its buffers are lost: every later use fails with COOP_ELOST (never
 * stale data); free them and create them again. */
#define COOP_BUFFER_KEEP 0x1u
/* A buffer of size > 0 bytes on device (COOP_ANY_DEVICE: device 0), holding
 * a copy of data (NULL: zeros); *buffer is its id. COOP_EBUSY: no room for
 * it in the device's arena now, which running jobs' copies hold (ask again
 * as they end); COOP_ENOMEM: it does not fit beside the device buffers
 * there; COOP_ELIMIT: past the user's share or count. */
int coop_buffer_create(coop_conn *c, int device, size_t size, const void *data, unsigned flags,
                       uint64_t *buffer);
/* Bytes [offset, offset + len) of the buffer from data, or into out. Up
 * to the daemon's inline_max the bytes travel in the request or its reply;
 * above, in a memfd the connection keeps for the next such op (up to 64
 * MiB; dropped after a failure), so a connection holds one memfd as large
 * as its largest such transfer until it closes. */
int coop_buffer_write(coop_conn *c, uint64_t buffer, size_t offset, const void *data, size_t len);
int coop_buffer_read(coop_conn *c, uint64_t buffer, size_t offset, void *out, size_t len);
int coop_buffer_free(coop_conn *c, uint64_t buffer);

/* ---- requests ---- */

/* Submits a job; *job is its id. The description may be freed or reused
 * right after. Buffers travel inside the request up to the daemon's
 * inline_max, larger ones in a memfd. A description may be submitted again
 * and again (a frame loop's, each frame): its input is read at each
 * submit, and a SUBMIT the same as the connection's last one (no buffer's
 * bytes in it) is sent as the frame kept of that one, not encoded anew. */
int coop_submit(coop_conn *c, const coop_job *j, uint64_t *job);

/* Waits up to timeout_ms (negative: forever; 0: just ask) for a job to
 * end. 0 with *r filled in once it has, whatever its state (DONE,
 * CANCELLED, REFUSED or FAILED: see r->state and r->error); COOP_ETIMEDOUT
 * while it runs; COOP_ENOJOB (also for another user's job), ... r needs
 * coop_result_free() only after a 0 return. */
int coop_wait(coop_conn *c, uint64_t job, int timeout_ms, struct coop_result *r);
void coop_result_free(struct coop_result *r);

/* Asks the daemon to cancel a job; a later coop_wait() reports how it
 * ended (a job may finish before the cancellation takes effect). */
int coop_cancel(coop_conn *c, uint64_t job);

/* Asks the daemon to move a cooperative job (running or waiting; one
 * task, no device buffers) to another device: it is suspended where it
 * runs, its state and buffers are copied over, and it resumes there where
 * it stopped (docs/daemon.md, "Moving jobs between devices"), once a
 * cooperative slot is free there; it stays there (it never moves by
 * itself after). Returns once the move is asked; coop_status's `device`
 * says where the job is. COOP_ESTATE when it cannot move (and why), COOP_EINVAL for no such
 * device, COOP_ENOJOB as coop_cancel. */
int coop_migrate(coop_conn *c, uint64_t job, unsigned device);

/* The status of one job, or with job == 0 of every job this client may
 * see. *list (release with free()) holds *n records. */
int coop_status(coop_conn *c, uint64_t job, struct coop_job_status **list, size_t *n);

int coop_stats(coop_conn *c, struct coop_stats *s);
/* One STATS request: the counters into *s (NULL: not wanted) and the
 * daemon's version, uptime and metrics into *m. */
int coop_metrics(coop_conn *c, struct coop_stats *s, struct coop_metrics *m);

/* The registered kernels; release *list with free(). */
int coop_kernels(coop_conn *c, struct coop_kernel **list, size_t *n);

/* A kernel as coop_kernels_info() and coop_kernel_add() describe it: its
 * signature, each argument's name ("" when the directive names none), its
 * `//@coop require` rules as written, and who added it. */
#define COOP_SHIPPED 0xffffffffu /* owner: one of coopd's own kernels */
struct coop_kernel_info {
  struct coop_kernel k;
  uint32_t owner; /* COOP_SHIPPED, or the uid of the author who added it */
  char argnames[COOP_MAX_ARGS][32];
  unsigned nrules;
  char rules[16][160];
};
/* The registered kernels with their argument names and rules; release
 * *list with free(). */
int coop_kernels_info(coop_conn *c, struct coop_kernel_info **list, size_t *n);

/* Kernel authors ([kernels] authors in coopd.ini; docs/kernels.md, "Adding
 * a kernel without root"). Each call returns when coopd's reload that
 * builds the new kernel set has ended (seconds on PoCL, up to minutes with
 * CUDA): 0 when it runs the change. Otherwise an error: COOP_EPERM (not an
 * author; another author's kernel), COOP_EEXIST (the name is taken),
 * COOP_ETOOBIG (the source is larger than coopd takes: [kernels]
 * max_source_bytes, and never more than COOP_SOURCE_MAX), COOP_ELIMIT (the
 * author's count), COOP_EBUSY (another reload is in progress: ask again),
 * COOP_ENOKERNEL, COOP_EBUILD (the kernel does not pass the checks or does
 * not compile): coop_errmsg() says why, and *log (when log is not NULL;
 * release it with free()) holds the whole checker's or compiler's log, at
 * the author's file and line, or NULL when there is none. */
/* Adds the kernel of source (len bytes; file: the name its messages give
 * it, a base name such as "mykernel.cl"), or replaces the caller's own of
 * that name; *info (when not NULL) describes it as it now runs. */
int coop_kernel_add(coop_conn *c, const char *file, const char *source, size_t len,
                    struct coop_kernel_info *info, char **log);
/* Removes a kernel the caller added (root: any author's). */
int coop_kernel_remove(coop_conn *c, const char *name, char **log);
/* Reads the kernels again and builds them, as SIGHUP does (authors and
 * root). */
int coop_reload(coop_conn *c, char **log);

/* The device as the daemon's scheduler last published it (every few ms):
 * *wgs (*nwg records) holds one record per worker workgroup, in the
 * megakernel's participant order, and *jobs (*njobs records) the running
 * jobs this client may see (root: every job). Another user's workgroups
 * appear as COOP_WORKER_OTHER with job 0. Release both lists with free()
 * (they are NULL when empty). A daemon older than this call answers
 * COOP_EPROTO and closes the connection: connect again to go on without
 * it. */
int coop_top(coop_conn *c, struct coop_wg **wgs, size_t *nwg, struct coop_topjob **jobs,
             size_t *njobs);
/* The same for one device (coop_top is device 0). */
int coop_top_device(coop_conn *c, int device, struct coop_wg **wgs, size_t *nwg,
                    struct coop_topjob **jobs, size_t *njobs);

/* A buffer argument's element type, as the kernel declares it
 * (`args=x:buf<f32>`): what a caller may check its array against.
 * COOP_ELEM_ANY where the kernel declares none, and for every scalar. */
enum coop_elem {
  COOP_ELEM_ANY = 0,
  COOP_ELEM_U8 = 1,
  COOP_ELEM_I8 = 2,
  COOP_ELEM_U16 = 3,
  COOP_ELEM_I16 = 4,
  COOP_ELEM_U32 = 5,
  COOP_ELEM_I32 = 6,
  COOP_ELEM_U64 = 7,
  COOP_ELEM_I64 = 8,
  COOP_ELEM_F32 = 9,
  COOP_ELEM_F64 = 10
};
/* One kernel's element types (coop_kernels_elems): elems[a] for each of
 * its nargs arguments, an enum coop_elem. */
struct coop_kernel_elems {
  char name[COOP_NAME_MAX];
  unsigned nargs;
  int elems[COOP_MAX_ARGS];
};
/* The registered kernels' element types, in coop_kernels_info()'s order
 * when nothing changed between the calls (match them by name); release
 * *list with free(). */
int coop_kernels_elems(coop_conn *c, struct coop_kernel_elems **list, size_t *n);

/* ---- events ---- */

/* Asks for the events in mask (COOP_EVENT_BIT()s; 0 unsubscribes) of every
 * job this client may see; fn(ev, user) is called for each, from inside
 * whichever libcoop call on this connection is reading when it arrives
 * (any call waiting for a reply, or coop_poll_events()). fn may call
 * libcoop, but not coop_disconnect(). RELEASED and GATHERED are live and
 * not sent while more than 1 MiB of this connection's replies are unread;
 * STARTED and FINISHED always come (PROTOCOL.md, EVENT). */
int coop_subscribe(coop_conn *c, uint32_t mask, coop_event_fn fn, void *user);

/* Waits up to timeout_ms (negative: forever) for events and dispatches
 * them. Returns how many were dispatched (0 on timeout) or an error. */
int coop_poll_events(coop_conn *c, int timeout_ms);

/* ---- names ---- */
const char *coop_state_name(int state);        /* "queued", ... */
const char *coop_type_name(int type);          /* "u32", ..., "buf" */
const char *coop_elem_name(int elem);          /* "u8", ..., "f64"; "" for COOP_ELEM_ANY */
const char *coop_event_name(int kind);         /* "released", ... */
const char *coop_worker_state_name(int state); /* "free", "running", "reserved", "other" */

#ifdef __cplusplus
}
#endif

#endif /* COOP_H */
