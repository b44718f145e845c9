/*
 * devproc_msg.c: the framing of the device process's messages
 * (devproc_msg.h): one entry per op, and the checks both ends make of what
 * they receive before they read it, as protocol/wire.c does for clients.
 */
#define _GNU_SOURCE /* MSG_CMSG_CLOEXEC */
#include "devproc_msg.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coop_errno.h"

/* Bodies: a fixed part only, or a fixed part and a list. */
#define FIXED(n) \
  { (uint32_t)(n), 0, 0, 0 }
#define NONE FIXED(0)
#define LIST(n, item, lo, hi) \
  { (uint32_t)(n), (uint32_t)(item), (lo), (hi) }
#define BUFS(lo, hi) LIST(offsetof(struct dp_bufs, b), sizeof(struct dp_buf_entry), lo, hi)
#define IDS LIST(offsetof(struct dp_poll_ids, id), sizeof(uint32_t), 0, DP_POLL_MAX)
#define INFOS LIST(0, sizeof(struct coop_rt_task_info), 0, DP_POLL_MAX)

const struct dp_op_entry dp_ops[DP_NOPS] = {
    [DP_OPEN] = {"open", FIXED(sizeof(struct dp_open_args)), FIXED(sizeof(struct dp_devinfo)), 1, 1,
                 1},
    [DP_LAUNCH] = {"launch", NONE, FIXED(sizeof(struct dp_devinfo)), 1, 0, 0},
    [DP_CLOSE] = {"close", NONE, NONE, 0, 0, 0},
    [DP_SUBMIT] = {"submit", FIXED(sizeof(struct coop_rt_task_desc)),
                   FIXED(sizeof(struct coop_rt_task_info)), 0, 0, 0},
    [DP_INFO] = {"info", NONE, FIXED(sizeof(struct coop_rt_task_info)), 0, 0, 0},
    [DP_LIVE] = {"live", NONE, FIXED(sizeof(struct coop_rt_live)), 0, 0, 0},
    [DP_CANCEL] = {"cancel", NONE, NONE, 0, 0, 0},
    [DP_RELEASE] = {"release", NONE, NONE, 0, 0, 0},
    [DP_VIEW] = {"view", NONE, LIST(0, sizeof(coop_task_id) + 1, 0, DP_VIEW_MAX), 0, 0, 0},
    [DP_STAGE] = {"stage", BUFS(0, DP_MAX_BUFS), LIST(0, sizeof(uint64_t), 0, DP_MAX_BUFS), 0, 0,
                  DP_MAX_FDS},
    [DP_UNSTAGE] = {"unstage", BUFS(0, DP_MAX_BUFS), NONE, 0, 0, DP_MAX_FDS},
    [DP_POLL] = {"poll", IDS, INFOS, 0, 0, 0},
    [DP_PARK] = {"park", NONE, NONE, 0, 0, 0},
    [DP_UNPARK] = {"unpark", NONE, FIXED(sizeof(struct dp_devinfo)), 1, 0, 0},
    [DP_KICKFD] = {"kickfd", NONE, NONE, 0, 1, 1},
    [DP_WAIT] = {"wait", IDS, INFOS, 0, 0, 0},
    [DP_WRITE] = {"write", BUFS(1, 1), NONE, 0, 0, 1},
    [DP_READ] = {"read", BUFS(1, 1), NONE, 0, 0, 1},
    [DP_CAP] = {"cap", NONE, NONE, 0, 0, 0},
    [DP_SUSPEND] = {"suspend", NONE, NONE, 0, 0, 0},
    [DP_SAVED] = {"saved", NONE, NONE, 0, 1, 1},
    [DP_RESUME] = {"resume", FIXED(sizeof(struct coop_rt_task_desc)), NONE, 0, 1, 1},
    [DP_DUP] = {"dup", BUFS(1, DP_MAX_BUFS), NONE, 0, 0, 0},
    [DP_SHM] = {"shm", NONE, NONE, 0, 1, 1},
    [DP_WIDTH] = {"width", NONE, LIST(0, sizeof(struct coop_rt_width), 1, DP_WIDTHS_MAX), 0, 0, 0},
    [DP_PREPARE] = {"prepare", NONE, NONE, 1, 0, 0},
    [DP_SHARE] = {"share", NONE, FIXED(sizeof(struct coop_rt_share)), 0, 0, 0},
    [DP_SHARE_OPEN] = {"share-open", FIXED(sizeof(struct coop_rt_share)), NONE, 0, 0, 0},
    [DP_SHARE_FREE] = {"share-free", NONE, NONE, 0, 0, 0},
    [DP_NEXT_BUILD] = {"next-build", NONE, NONE, 1, 1, 1},
    [DP_NEXT_POLL] = {"next-poll", NONE, NONE, 1, 0, 0},
    [DP_NEXT_SWAP] = {"next-swap", NONE, FIXED(sizeof(struct dp_devinfo)), 1, 0, 0},
    [DP_NEXT_DROP] = {"next-drop", NONE, NONE, 0, 0, 0},
    [DP_SUBMIT_IO] = {"submit-io",
                      LIST(offsetof(struct dp_submit_io, b), sizeof(struct dp_buf_entry), 1,
                           DP_MAX_BUFS),
                      FIXED(sizeof(struct coop_rt_task_info)), 0, 0, 0},
};

/* Each body fits its union member, whatever the count. */
_Static_assert(offsetof(struct dp_bufs, b) + DP_MAX_BUFS * sizeof(struct dp_buf_entry) ==
                   sizeof(struct dp_bufs),
               "a full list of buffers is the whole struct");
_Static_assert(offsetof(struct dp_submit_io, b) + DP_MAX_BUFS * sizeof(struct dp_buf_entry) ==
                   sizeof(struct dp_submit_io),
               "a full list of ranges is the whole struct");
_Static_assert(offsetof(struct dp_poll_ids, id) + DP_POLL_MAX * sizeof(uint32_t) ==
                   sizeof(struct dp_poll_ids),
               "a full list of ids is the whole struct");
_Static_assert(DP_VIEW_MAX *(sizeof(coop_task_id) + 1) <= DP_TEXT_MAX,
               "a view is no longer than the reply's union");
_Static_assert(DP_WIDTHS_MAX * sizeof(struct coop_rt_width) <= DP_TEXT_MAX,
               "every width fits the reply's union as it was");

const struct dp_op_entry *dp_op_entry(uint32_t op) {
  return op > 0 && op < DP_NOPS && dp_ops[op].name ? &dp_ops[op] : NULL;
}

static size_t body_len(const struct dp_rule *r, uint32_t count) {
  return r->item ? r->len + (size_t)count * r->item : r->len;
}

size_t dp_req_len(const struct dp_req *q) {
  const struct dp_op_entry *e = dp_op_entry(q->op);
  if (!e) return 0;
  uint32_t count = 0;
  if (e->req.item) {
    memcpy(&count, &q->u, sizeof count); /* every list counts itself first */
    if (count < e->req.items_min || count > e->req.items_max) return 0;
  }
  return DP_REQ_HDR + body_len(&e->req, count);
}

size_t dp_rep_len(const struct dp_rep *r) {
  const struct dp_op_entry *e = dp_op_entry(r->op);
  if (!e) return DP_REP_HDR; /* the answer to an unknown op: its error alone */
  if (r->err)
    return DP_REP_HDR + (e->text && r->u.text[0] ? strnlen(r->u.text, DP_TEXT_MAX - 1) + 1 : 0);
  uint32_t count = e->rep.item ? r->n : 0;
  if (e->rep.item && count > e->rep.items_max) return 0;
  return DP_REP_HDR + body_len(&e->rep, count);
}

static int refuse(const char **why, const char *what) {
  if (why) *why = what;
  return COOP_EPROTO;
}

/* What is wrong with a body of n bytes for rule r, or NULL. Its count is
 * read only once n is known to hold it: at count_at (a request's first
 * u32), or the header's (count_at NULL: a reply's rep.n). */
static const char *body_wrong(const struct dp_rule *r, size_t n, const void *count_at,
                              uint32_t count) {
  size_t lo = r->len + (size_t)r->items_min * r->item, hi = r->len + (size_t)r->items_max * r->item;
  if (n < lo) return "shorter than its op's body";
  if (n > hi) return "longer than its op's body";
  if (!r->item) return NULL;
  if (count_at) memcpy(&count, count_at, sizeof count);
  if (count < r->items_min || count > r->items_max || n != body_len(r, count))
    return "length does not match its count";
  return NULL;
}

int dp_req_check(const void *m, size_t len, unsigned nfds, const char **why) {
  if (why) *why = NULL;
  if (len < DP_REQ_HDR) return refuse(why, "shorter than a request's header");
  uint32_t op;
  memcpy(&op, m, sizeof op);
  const struct dp_op_entry *e = dp_op_entry(op);
  if (!e) return refuse(why, "unknown op");
  const uint8_t *body = (const uint8_t *)m + DP_REQ_HDR;
  size_t n = len - DP_REQ_HDR;
  if (op == DP_OPEN && n >= sizeof(uint32_t)) {
    /* the stamp first: another build's OPEN may have another length too,
     * and its front is told what happened rather than "malformed" */
    uint32_t layout;
    memcpy(&layout, body + offsetof(struct dp_open_args, layout), sizeof layout);
    if (layout != DP_LAYOUT) {
      if (why) *why = "another build of coopd (layout stamp)";
      return COOP_EVERSION;
    }
  }
  const char *wrong = body_wrong(&e->req, n, body, 0);
  if (wrong) return refuse(why, wrong);
  if (nfds < e->fds_min || nfds > e->fds_max) return refuse(why, "descriptors not its op's");
  return 0;
}

int dp_rep_check(uint32_t op, const void *m, size_t len, const char **why) {
  if (why) *why = NULL;
  if (len < DP_REP_HDR) return refuse(why, "short reply");
  struct dp_rep h;
  memcpy(&h, m, DP_REP_HDR);
  const struct dp_op_entry *e = dp_op_entry(op);
  if (!e || h.op != op) return refuse(why, "reply to another op");
  const uint8_t *body = (const uint8_t *)m + DP_REP_HDR;
  size_t n = len - DP_REP_HDR;
  if (h.err) {
    if (n == 0) return 0;
    if (!e->text || n > DP_TEXT_MAX) return refuse(why, "error reply with a body");
    if (body[n - 1] != '\0') return refuse(why, "unterminated error text");
    return 0;
  }
  const char *wrong = body_wrong(&e->rep, n, NULL, h.n);
  if (wrong) return refuse(why, wrong);
  return 0;
}

ssize_t dp_send(int fd, const void *m, size_t len, const int *fds, unsigned nfds) {
  if (nfds > DP_MAX_FDS) return errno = EINVAL, -1;
  char cbuf[CMSG_SPACE(DP_MAX_FDS * sizeof(int))];
  struct iovec iov = {(void *)m, len};
  struct msghdr mh = {0};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (nfds) {
    memset(cbuf, 0, sizeof cbuf);
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  ssize_t n;
  do n = sendmsg(fd, &mh, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

ssize_t dp_recv(int fd, void *buf, size_t cap, int flags, int *fds, unsigned *nfds, int *cut) {
  /* one descriptor more than allowed fits, so that an excess is seen (and closed) */
  char cbuf[CMSG_SPACE((DP_MAX_FDS + 1) * sizeof(int))];
  struct iovec iov = {buf, cap};
  struct msghdr mh = {0};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (fds) {
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
  }
  ssize_t n;
  do n = recvmsg(fd, &mh, flags | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  *cut = n >= 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
  if (nfds) *nfds = 0;
  for (struct cmsghdr *c = n >= 0 && fds ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (unsigned i = 0; i < k; i++) {
        int d;
        memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
        if (*nfds < DP_MAX_FDS)
          fds[(*nfds)++] = d;
        else {
          close(d);
          *cut = 1;
        }
      }
    }
  return n;
}
