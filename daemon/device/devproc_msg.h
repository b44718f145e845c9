/*
 * devproc_msg.h: the messages between coopd and a device process
 * (devproc.h), and their framing (devproc_msg.c). Internal to devproc.c and
 * devproc_child.c; both ends are the same binary, so the structures travel
 * as they are. One request, then one reply, each a single SOCK_SEQPACKET
 * message: a header, then only the body its op needs (dp_ops[]), never
 * the whole union. Descriptors (a memfd of kernel sources, a job's buffer
 * memfd) ride along with SCM_RIGHTS. A receiver checks a message's length
 * against its op's entry before it reads any field past the header
 * (dp_req_check, dp_rep_check).
 */
#ifndef COOPD_DEVPROC_MSG_H
#define COOPD_DEVPROC_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coop_rt.h"
#include "devproc.h" /* DP_WIDTHS_MAX */

enum dp_op {
  DP_OPEN = 1, /* fd: sources; u.open */
  DP_LAUNCH,
  DP_CLOSE,
  DP_SUBMIT,     /* u.desc, b = wait ns, a = device buffer args (bits), id = 1: end it
                  * -> rep.a = task id, rep.u.info, rep.n (DP_ENDED, breach + 1 << 8);
                  * a task with id = 1, not cooperative, not final at the reply is
                  * ended by the POLL or WAIT reply that first finds it final */
  DP_INFO,       /* id -> rep.u.info */
  DP_LIVE,       /* id -> rep.u.live */
  DP_CANCEL,     /* id */
  DP_RELEASE,    /* id */
  DP_VIEW,       /* a = n -> rep.n owners (u32) then rep.n reserved bytes in rep.u.view */
  DP_STAGE,      /* u.bufs, fds: allocate every buffer, copy IN data -> rep.n args in rep.u.args */
  DP_UNSTAGE,    /* u.bufs, fds: copy OUT data, free every buffer -> rep.n = breach + 1 */
  DP_POLL,       /* u.poll -> rep.n infos in rep.u.infos: one request per device pass;
                  * rep.a bit i (i < 64): task i ended here as SUBMIT's id = 1 asked
                  * (released, its guard zones found whole, a DONE task's ranges
                  * out copied); else the front ends it */
  DP_PARK,       /* the megakernel leaves the device (coop_rt_park) */
  DP_UNPARK,     /* and comes back (coop_rt_unpark) -> rep.u.dev, as LAUNCH */
  DP_KICKFD,     /* fd: the front's eventfd, written when its device thread has new work;
                  * a = the idle spin, ns (dp_set_kick) */
  DP_WAIT,       /* u.poll, a = budget ns, b = spin: as POLL, once a task changed state, the
                  * kick fd was written, or the budget is spent (devproc_child.c) */
  DP_WRITE,      /* u.bufs, fds: each b[i].size bytes from its fd at off into the
                  * buffer b[i].arg at b[i].at */
  DP_READ,       /* u.bufs, fds: the same range the other way */
  DP_CAP,        /* id, a = the most workgroups (0: none) -> coop_rt_cap */
  DP_SUSPEND,    /* id -> coop_rt_suspend */
  DP_SAVED,      /* id, fd: the SUSPENDED task's saved state written at 0 -> rep.a = bytes */
  DP_RESUME,     /* u.desc, fd: a saved state -> coop_rt_submit_resumed, rep.a = task id */
  DP_WIDTH,      /* a = 1: each kernel alone too -> rep.n widths in rep.u.widths: the merged
                  * megakernel's, then each kernel's (coop_rt_kernel_width) */
  DP_DUP,        /* u.bufs, a = a buffer arg: each b[i].size bytes of the buffer b[i].arg copied
                  * into that buffer at b[i].at, on the device -> rep.n = breach + 1 */
  DP_SHM,        /* fd: the shared channel's memfd (devproc_shm.h) -> rep.n = 1: mapped, and
                  * requests without descriptors come through it from now on */
  DP_PREPARE,    /* coop_rt_prepare: the arena, no launch (buffers staged before it) */
  DP_SHARE,      /* a = bytes -> rep.a = its address here, rep.u.share (coop_rt_share_alloc) */
  DP_SHARE_OPEN, /* u.share, another device process's -> rep.a = its address here */
  DP_SHARE_FREE, /* a = a share's address here (coop_rt_share_free) */
  DP_NEXT_BUILD, /* fd: sources (as DP_OPEN's), a = their count: the next kernel set, built in
                  * place on a thread of the child's while it answers on (coop_rt_next_build) */
  DP_NEXT_POLL,  /* -> rep.n = 1 built, 0 still building; an error and its log: it failed */
  DP_NEXT_SWAP,  /* the built set swapped in: park, coop_rt_next_swap, unpark -> rep.u.dev */
  DP_NEXT_DROP,  /* the next set let go (its build waited for) */
  DP_SUBMIT_IO,  /* u.sio, a, b, id as DP_SUBMIT's: a one-task job's ranges of the file mapped
                  * here as u.sio.dev, .ino moved with its task: in, ordered before it
                  * (coop_rt_submit_io); out, once it ended DONE within the wait
                  * -> as DP_SUBMIT's, rep.n also DP_IO_OUT (the ranges out were
                  * copied); or rep.n = DP_IO_UNMAPPED alone: the file is not mapped
                  * here (a park clears the mappings), nothing was submitted */
  DP_NOPS        /* one past the last op */
};

/* DP_SUBMIT's reply: the task ended within the wait and was released, its
 * device buffers' guard zones checked (rep.n >> 8: the first breached + 1). */
#define DP_ENDED 1u
#define DP_IO_OUT 2u      /* DP_SUBMIT_IO: its ranges out were copied too */
#define DP_IO_UNMAPPED 4u /* DP_SUBMIT_IO: nothing submitted, the file is not mapped here */

#define DP_POLL_MAX 128 /* task infos per DP_POLL reply */
struct dp_poll_ids {
  uint32_t n; /* the ids that follow: only those travel */
  uint32_t id[DP_POLL_MAX];
};

/* A job's buffers for DP_STAGE / DP_UNSTAGE: one request for all of them.
 * fd indexes the descriptors sent with the request (-1: none); off is
 * where in that descriptor the buffer's bytes are. */
#define DP_MAX_BUFS COOP_MAX_ARGS /* a task's buffers: one per argument at most */
#define DP_MAX_FDS (DP_MAX_BUFS + 2)
/* An entry's fd: its bytes are not in a descriptor but at the address
 * `at` of a share this process holds (DP_SHARE, DP_SHARE_OPEN): DP_STAGE
 * and DP_UNSTAGE copy on the device (coop_rt_share_copy). */
#define DP_FD_SHARE (-2)
/* A DP_WRITE's or DP_READ's fd: no descriptor travels (so the request
 * may go by the shared channel); the file is the one this process holds
 * mapped and pinned as the request's a (st_dev) and b (st_ino), for the
 * entry's owner (xmap.h, xmap_find). Its reply's n: 1 copied, 0 not
 * mapped here (nothing copied: the front sends the descriptor). For a
 * request with its descriptor, n = 1 says the file is mapped now. */
#define DP_FD_PINNED (-3)
/* A DP_WRITE's fd: no descriptor; the range is zeroed (a device buffer
 * created without contents, zeroed in slices as a write; dev_bufs.c). */
#define DP_FD_ZERO (-4)
struct dp_bufs {
  uint32_t n; /* the entries of b that follow: only those travel */
  struct dp_buf_entry {
    uint64_t size, arg, off;
    uint64_t at; /* DP_WRITE, DP_READ: where in the buffer; DP_DUP: in the copy */
    int32_t fd;
    uint8_t in, out;
    uint8_t keep;   /* DP_UNSTAGE: a device buffer, not freed: 1 its guard zones checked,
                     * 2 not (a kernel of views: kset.h, kdef.views) */
    uint32_t owner; /* uid + 1 of the client whose descriptor fd is (0: coopd's own):
                     * what it may keep pinned is bounded per owner (xmap.h) */
  } b[DP_MAX_BUFS];
};

/* DP_SUBMIT_IO's body: the task, and its ranges (b[i].in, .out: which
 * way; .arg, .at: where in which buffer; .off: where in the file; .owner
 * as DP_WRITE's; fd unused), all of one file, mapped here (dev, ino:
 * xmap.h). */
struct dp_submit_io {
  uint32_t n; /* the entries of b that follow: only those travel */
  uint32_t pad;
  uint64_t dev, ino;
  struct coop_rt_task_desc desc;
  struct dp_buf_entry b[DP_MAX_BUFS];
};

struct dp_open_args {
  uint32_t layout; /* DP_LAYOUT of the front: both ends must be one binary (first: see
                    * dp_req_check) */
  char backend[16], platform[256], device[256];
  int32_t platform_index, device_index;
  uint32_t local_size, launch_groups, nkernels;
  uint64_t arena_bytes;
  uint64_t device_bytes;  /* coop_rt_options.device_bytes */
  uint32_t max_registers; /* coop_rt_options.max_registers */
  uint32_t widths_only;   /* open and register, no build: a process that only
                           * measures widths (devproc.c, probe_widths) */
};

/* A request: the header (op .. b), then u's member for op. */
struct dp_req {
  uint32_t op, id;
  uint64_t a, b;
  /* the front's warm window ends then (CLOCK_MONOTONIC ns; 0: none, see
   * dp_set_warm): until then the child spins where it would sleep */
  int64_t warm_until;
  union {
    struct dp_open_args open;
    struct coop_rt_task_desc desc;
    struct dp_bufs bufs;
    struct dp_submit_io sio;
    struct dp_poll_ids poll;
    struct coop_rt_share share;
  } u;
};
#define DP_REQ_HDR offsetof(struct dp_req, u)

/* What OPEN and LAUNCH tell about the device. */
struct dp_devinfo {
  char name[256], backend[16], note[1024];
  uint32_t cus, workers;
};

#define DP_TEXT_MAX 20480 /* a compiler log (the runtime keeps 16 KiB), or another message */
#define DP_VIEW_MAX 4096u /* workers in a DP_VIEW reply (COOP_WIRE_MAX_WG) */

/* A reply: the header (op .. a), then u's member for op (dp_ops[]). op
 * repeats the request's, so that a reply is checked against what was
 * asked. */
struct dp_rep {
  uint32_t op;
  int32_t err;
  uint32_t n;
  /* DP_SUBMIT's reply, when its wait saw the task final: ns from the
   * task's submit to that moment (for the trace, dp_seen); else 0 */
  uint32_t seen_after;
  uint64_t a;
  /* the child's CLOCK_MONOTONIC when it took the request and when it sent
   * this reply (the trace's device-process legs, dp_last_call) */
  int64_t t_took, t_replied;
  union {
    struct coop_rt_task_info info;
    struct coop_rt_live live;
    struct dp_devinfo dev;
    uint64_t args[DP_MAX_BUFS];
    struct coop_rt_task_info infos[DP_POLL_MAX];
    uint8_t view[DP_VIEW_MAX * (sizeof(coop_task_id) + 1)]; /* owners, then reserved bytes */
    struct coop_rt_width widths[DP_WIDTHS_MAX];
    struct coop_rt_share share;
    char text[DP_TEXT_MAX]; /* an error's message, NUL-terminated */
  } u;
};
#define DP_REP_HDR offsetof(struct dp_rep, u)

/* One op's message rules. A body is `len` bytes, plus `item` bytes for
 * each of its items where it has a list (a request's count: the body's
 * first u32; a reply's: rep.n), from items_min to items_max of them. */
struct dp_rule {
  uint32_t len, item, items_min, items_max;
};
struct dp_op_entry {
  const char *name;
  struct dp_rule req; /* the request's body */
  struct dp_rule rep; /* the reply's body when rep.err == 0 */
  /* rep.err != 0: no body, or where text is set a NUL-terminated message
   * (1 to DP_TEXT_MAX bytes) */
  uint8_t text;
  uint8_t fds_min, fds_max; /* descriptors the request carries */
};

/* Indexed by op; dp_ops[0] is no op (name NULL). */
extern const struct dp_op_entry dp_ops[DP_NOPS];

/* The op's entry, or NULL for no op. */
const struct dp_op_entry *dp_op_entry(uint32_t op);

/* The length of q as it travels (header and the body its op and count
 * say), or 0 for an unknown op or a count out of range. */
size_t dp_req_len(const struct dp_req *q);
/* The length of r, a reply to r->op, as it travels: on success the op's
 * body for r->n, on error the message in r->u.text where the op may carry
 * one (an empty string: none). 0 for an unknown op. */
size_t dp_rep_len(const struct dp_rep *r);

/* Whether the len bytes at m, with nfds descriptors, are a well-formed
 * request: the header there, a known op, the stamp of DP_OPEN, the length
 * the op's entry gives (for its count), the descriptors it allows. Reads
 * nothing past len, and no field before the length that holds it is
 * checked. 0, COOP_EVERSION (a DP_OPEN from another build), or
 * COOP_EPROTO; *why says what was wrong. */
int dp_req_check(const void *m, size_t len, unsigned nfds, const char **why);
/* The same for a reply to op: its header, the op repeated, its length
 * for rep.n or its error's message. 0 or COOP_EPROTO, and *why. */
int dp_rep_check(uint32_t op, const void *m, size_t len, const char **why);

/* One message (len bytes, fds[0..nfds) with SCM_RIGHTS): len sent, or -1
 * (errno). EINTR is retried. */
ssize_t dp_send(int fd, const void *m, size_t len, const int *fds, unsigned nfds);
/* One message into buf (cap bytes), its descriptors into fds (room for
 * DP_MAX_FDS; fds NULL: none wanted) and *nfds: its length, 0 once the
 * peer has closed, -1 (errno: EAGAIN under MSG_DONTWAIT). *cut is set when
 * the message was longer than cap or carried more descriptors than there
 * was room for (those are closed): such a message is malformed. EINTR is
 * retried. */
ssize_t dp_recv(int fd, void *buf, size_t cap, int flags, int *fds, unsigned *nfds, int *cut);

/* A stamp of the messages' layout: a front and a device process from two
 * different builds (a binary replaced under a running coopd) must not talk. */
#define DP_LAYOUT                                                                           \
  ((uint32_t)(sizeof(struct dp_req) * 65599u + sizeof(struct dp_rep) * 31u + DP_NOPS * 7u + \
              DP_REP_HDR) ^                                                                 \
   0x636f6f70u)

#endif /* COOPD_DEVPROC_MSG_H */
