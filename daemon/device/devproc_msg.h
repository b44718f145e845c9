/*
 * devproc_msg.h: the messages between coopd and a device process
 * (devproc.h). Internal to devproc.c and devproc_child.c; both ends are the
 * same binary, so the structures travel as they are. One request, then one
 * reply, each a single SOCK_SEQPACKET message; descriptors (a memfd of
 * kernel sources, a job's buffer memfd) ride along with SCM_RIGHTS.
 */
#ifndef COOPD_DEVPROC_MSG_H
#define COOPD_DEVPROC_MSG_H

#include <stdint.h>

#include "coop_rt.h"

enum dp_op {
  DP_OPEN = 1, /* fd: sources; u.open */
  DP_LAUNCH,
  DP_CLOSE,
  DP_SUBMIT,  /* u.desc, b = wait ns, a = device buffer args (bits), id = 1: end it
               * -> rep.a = task id, rep.u.info, rep.n (DP_ENDED, breach + 1 << 8) */
  DP_INFO,    /* id -> rep.u.info */
  DP_LIVE,    /* id -> rep.u.live */
  DP_CANCEL,  /* id */
  DP_RELEASE, /* id */
  DP_VIEW,    /* a = n -> rep.n owners (u32) then n reserved bytes in rep.data */
  DP_STAGE,   /* u.bufs, fds: allocate every buffer, copy IN data -> rep.u.args */
  DP_UNSTAGE, /* u.bufs, fds: copy OUT data, free every buffer -> rep.n = breach + 1 */
  DP_POLL,    /* u.poll -> rep.n infos in rep.data: one request per device pass */
  DP_PARK,    /* the megakernel leaves the device (coop_rt_park) */
  DP_UNPARK,  /* and comes back (coop_rt_unpark) -> rep.u.dev, as LAUNCH */
  DP_KICKFD,  /* fd: the front's eventfd, written when its device thread has new work */
  DP_WAIT,    /* u.poll, a = budget ns, b = spin: as POLL, once a task changed state, the
               * kick fd was written, or the budget is spent (devproc_child.c) */
  DP_WRITE,   /* u.bufs, fds: each b[i].size bytes from its fd at off into the
               * buffer b[i].arg at b[i].at */
  DP_READ,    /* u.bufs, fds: the same range the other way */
  DP_CAP,     /* id, a = the most workgroups (0: none) -> coop_rt_cap */
  DP_SUSPEND, /* id -> coop_rt_suspend */
  DP_SAVED,   /* id, fd: the SUSPENDED task's saved state written at 0 -> rep.a = bytes */
  DP_RESUME   /* u.desc, fd: a saved state -> coop_rt_submit_resumed, rep.a = task id */
};

/* DP_SUBMIT's reply: the task ended within the wait and was released, its
 * device buffers' guard zones checked (rep.n >> 8: the first breached + 1). */
#define DP_ENDED 1u

#define DP_POLL_MAX 128 /* task infos per DP_POLL reply (fits DP_DATA_MAX) */
struct dp_poll_ids {
  uint32_t n;
  uint32_t id[DP_POLL_MAX];
};

/* A job's buffers for DP_STAGE / DP_UNSTAGE: one request for all of them.
 * fd indexes the descriptors sent with the request (-1: none); off is
 * where in that descriptor the buffer's bytes are. */
#define DP_MAX_BUFS COOP_MAX_ARGS /* a task's buffers: one per argument at most */
#define DP_MAX_FDS (DP_MAX_BUFS + 2)
struct dp_bufs {
  uint32_t n;
  struct {
    uint64_t size, arg, off;
    uint64_t at; /* DP_WRITE, DP_READ: where in the buffer */
    int32_t fd;
    uint8_t in, out;
    uint8_t keep; /* DP_UNSTAGE: a device buffer: guard zones checked, not freed */
  } b[DP_MAX_BUFS];
};

struct dp_open_args {
  uint32_t layout; /* DP_LAYOUT of the front: both ends must be one binary */
  char backend[16], platform[256], device[256];
  int32_t platform_index, device_index;
  uint32_t local_size, launch_groups, nkernels;
  uint64_t arena_bytes;
};

struct dp_req {
  uint32_t op, id;
  uint64_t a, b;
  union {
    struct dp_open_args open;
    struct coop_rt_task_desc desc;
    struct dp_bufs bufs;
    struct dp_poll_ids poll;
  } u;
};

/* What OPEN and LAUNCH tell about the device. */
struct dp_devinfo {
  char name[256], backend[16], note[1024];
  uint32_t cus, workers;
};

#define DP_DATA_MAX 20480 /* a compiler log (16 KiB), or a view */

struct dp_rep {
  int32_t err;
  uint32_t n;
  uint64_t a;
  union {
    struct coop_rt_task_info info;
    struct coop_rt_live live;
    struct dp_devinfo dev;
    uint64_t args[DP_MAX_BUFS];
  } u;
  char data[DP_DATA_MAX];
};

_Static_assert(DP_POLL_MAX * sizeof(struct coop_rt_task_info) <= DP_DATA_MAX,
               "a poll's infos fit a reply");

/* A stamp of the messages' layout: a front and a device process from two
 * different builds (a binary replaced under a running coopd) must not talk. */
#define DP_LAYOUT \
  ((uint32_t)(sizeof(struct dp_req) * 65599u + sizeof(struct dp_rep) * 31u + DP_POLL) ^ 0x636f6f70u)

#endif /* COOPD_DEVPROC_MSG_H */
