/*
 * wire.h: the coop wire protocol, version 8 (COOP_WIRE_VERSION; PROTOCOL.md).
 *
 * A frame is a 16-byte header and a payload, all integers big-endian:
 *   u32 magic 'COOP' (0x434f4f50) | u16 version | u16 type | u32 seq | u32 len
 * `seq` is chosen by the client for a request and echoed in its reply;
 * daemon-initiated frames (EVENT) carry seq 0. The payload of each type is a
 * fixed sequence of fields, listed once in coop_schema.h (the structs below
 * are made from those lists); the decoder rejects short payloads, trailing
 * bytes, out-of-range enums and counts above the limits.
 *
 * Field encodings: u8/u16/u32/u64/i32/i64 big-endian two's complement;
 * str = u16 length + bytes (no NUL, no embedded NUL, length < the field's
 * max); blob = u32 length + bytes.
 *
 * File descriptors (memfd buffers) travel beside a frame as SCM_RIGHTS
 * ancillary data of the sendmsg() that begins with the frame's first byte
 * and carries no byte of a later frame; a SUBMIT argument names one by its
 * index among that frame's descriptors.
 *
 * The codec is pure: no I/O, no allocation in decode (decoded strings are
 * copied into fixed arrays; blobs and record arrays point into the payload,
 * valid while the payload is). Encoding appends to a growable buffer.
 * Every function returns 0 or a negative coop_errno (COOP_EPROTO for
 * malformed input, COOP_ETOOBIG above a limit, COOP_EVERSION, COOP_ENOMEM).
 */
#ifndef COOP_WIRE_H
#define COOP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "coop_errno.h"
#include "coop_limits.h"
#include "coop_schema.h"

#define COOP_WIRE_MAGIC 0x434f4f50u /* "COOP" */
#define COOP_WIRE_VERSION 8u        /* the only version this code speaks */
#define COOP_WIRE_HDR 16u
#define COOP_WIRE_MAX_PAYLOAD (4u << 20)  /* a frame's payload, at most */
#define COOP_WIRE_INLINE_MAX (256u << 10) /* one inline buffer, at most */
#define COOP_WIRE_MAX_FDS 16u             /* descriptors beside one frame */
#define COOP_WIRE_FD_NONE 0xffu
/* devbuf_io's fd naming the connection's transfer memfd (XFER), not a
 * descriptor of the frame: such a SUBMIT carries none and may go by the
 * shared ring */
#define COOP_WIRE_FD_XFER 0xfeu
#define COOP_WIRE_SOURCE_MAX COOP_SOURCE_MAX /* KERNEL_ADD's source, at most */
#define COOP_WIRE_LOG_MAX (64u << 10)        /* KERNEL_DONE's log, at most */
#define COOP_WIRE_ARGNAME_MAX 32u            /* a kernel argument's name: < 32 bytes */
#define COOP_WIRE_RULE_MAX 160u              /* a require rule's text: < 160 bytes */
#define COOP_WIRE_MAX_RULES 16u              /* require rules of one kernel */
#define COOP_WIRE_SHIPPED 0xffffffffu        /* KERNEL_LIST owner: not an author's */
/* The wire's spellings of the shared limits (coop_limits.h). */
#define COOP_WIRE_NAME_MAX COOP_NAME_MAX
#define COOP_WIRE_TEXT_MAX COOP_TEXT_MAX
#define COOP_WIRE_MAX_ARGS COOP_MAX_ARGS
#define COOP_WIRE_MAX_DEVICES COOP_MAX_DEVICES
#define COOP_WIRE_MAX_INST COOP_MAX_INSTANCES
#define COOP_WIRE_MAX_BOUNDS COOP_MAX_BOUNDS
#define COOP_WIRE_ANY_DEVICE 0xffu /* SUBMIT: the least loaded device */
#define COOP_WAIT_FOREVER 0xffffffffu

enum coop_msg_type {
  /* client -> daemon */
  COOP_MSG_HELLO = 1,
  COOP_MSG_SUBMIT = 2,
  COOP_MSG_STATUS = 3,
  COOP_MSG_WAIT = 4,
  COOP_MSG_CANCEL = 5,
  COOP_MSG_STATS = 6,
  COOP_MSG_KERNELS = 7,
  COOP_MSG_SUBSCRIBE = 8,
  COOP_MSG_TOP = 9, /* empty payload */
  COOP_MSG_BUF_CREATE = 10,
  COOP_MSG_BUF_WRITE = 11,
  COOP_MSG_BUF_READ = 12,
  COOP_MSG_BUF_FREE = 13,
  COOP_MSG_KERNEL_ADD = 14,    /* answered by KERNEL_DONE once the reload ended */
  COOP_MSG_KERNEL_REMOVE = 15, /* the same */
  COOP_MSG_RELOAD = 16,        /* empty payload; the same */
  COOP_MSG_MIGRATE = 17,       /* answered by OK once the move is asked */
  COOP_MSG_RING_OPEN = 18,     /* empty; answered by OK with the ring's memfd (ring.h) */
  COOP_MSG_RING_BELL = 19,     /* empty; no reply: "look at the ring" */
  COOP_MSG_XFER = 20,          /* empty, one descriptor: the connection's transfer memfd
                                * (COOP_WIRE_FD_XFER); answered by OK */
  /* daemon -> client */
  COOP_MSG_WELCOME = 64,
  COOP_MSG_ACCEPTED = 65,
  COOP_MSG_STATUS_REPLY = 66,
  COOP_MSG_RESULT = 67,
  COOP_MSG_OK = 68,
  COOP_MSG_STATS_REPLY = 69,
  COOP_MSG_KERNEL_LIST = 70,
  COOP_MSG_EVENT = 71,
  COOP_MSG_TOP_REPLY = 72,
  COOP_MSG_BUFFER = 73,
  COOP_MSG_BUF_DATA = 74,
  COOP_MSG_KERNEL_DONE = 75,
  COOP_MSG_RING_WAKE = 76, /* empty: "look at the ring" */
  COOP_MSG_ERROR = 127
};

/* Scalar and buffer argument types (SUBMIT, KERNEL_LIST). */
enum coop_arg_type {
  COOP_ARG_U32 = 1,
  COOP_ARG_I32 = 2,
  COOP_ARG_U64 = 3,
  COOP_ARG_I64 = 4,
  COOP_ARG_F32 = 5,
  COOP_ARG_F64 = 6,
  COOP_ARG_BUF = 7,
  /* SUBMIT only: a device buffer (BUF_CREATE) by its id, in bits; the
   * kernel's argument is a buffer (COOP_ARG_BUF in KERNEL_LIST) */
  COOP_ARG_DEVBUF = 8,
  /* SUBMIT only: a device buffer as COOP_ARG_DEVBUF, with a range of it
   * written before the job's first task (dir IN) and read after its last
   * (dir OUT) through a descriptor of the frame: one crossing each way for
   * a frame's input and output (PROTOCOL.md, "Device buffers") */
  COOP_ARG_DEVBUF_IO = 9
};

/* A buffer argument's element type (KERNEL_LIST, after the argument's
 * name: `args=x:buf<f32>`), COOP_WIRE_ELEM_ANY where the kernel declares none
 * and for every scalar: what a client may check its array against. */
enum coop_elem_type {
  COOP_WIRE_ELEM_ANY = 0,
  COOP_WIRE_ELEM_U8 = 1,
  COOP_WIRE_ELEM_I8 = 2,
  COOP_WIRE_ELEM_U16 = 3,
  COOP_WIRE_ELEM_I16 = 4,
  COOP_WIRE_ELEM_U32 = 5,
  COOP_WIRE_ELEM_I32 = 6,
  COOP_WIRE_ELEM_U64 = 7,
  COOP_WIRE_ELEM_I64 = 8,
  COOP_WIRE_ELEM_F32 = 9,
  COOP_WIRE_ELEM_F64 = 10
};
#define COOP_WIRE_ELEM_LAST COOP_WIRE_ELEM_F64

/* Buffer direction: what is copied to the device and back. */
enum coop_buf_dir { COOP_BUF_IN = 1, COOP_BUF_OUT = 2, COOP_BUF_INOUT = 3 };

/* Job states as the daemon reports them. */
enum coop_job_state {
  COOP_JOB_QUEUED = 1, /* accepted, waiting for workgroups (or for its period) */
  COOP_JOB_RUNNING = 2,
  COOP_JOB_DONE = 3,
  COOP_JOB_CANCELLED = 4,
  COOP_JOB_REFUSED = 5, /* invalid for this device or kernel: see error */
  COOP_JOB_FAILED = 6   /* the daemon could not run or finish it: see error */
};

/* SUBMIT flags. */
#define COOP_SUBMIT_COOPERATIVE 0x1u
#define COOP_SUBMIT_QUERY_BARRIER 0x2u /* resizing barrier: query variant */
/* The job outlives its connection: it is not cancelled when the client
 * disconnects, and any connection of the same uid (or root) may WAIT for,
 * STATUS or CANCEL it (coopctl submit without --wait). Without it, a
 * client's unfinished jobs are cancelled when its connection closes. */
#define COOP_SUBMIT_DETACHED 0x4u
/* The kernel's own kind: coopd sets or clears COOPERATIVE from the kernel
 * it runs (version 8), where the client did not say. */
#define COOP_SUBMIT_OWN_KIND 0x8u
#define COOP_SUBMIT_FLAGS_ALL 0xfu

/* BUF_CREATE flags. The buffer outlives its connection (any connection of
 * its uid may use and free it; counted against [limits]
 * max_kept_buffers_per_uid once its connection has gone). Without it, a
 * buffer is freed when the connection that created it closes. */
#define COOP_BUFFER_KEEP 0x1u
#define COOP_BUFFER_FLAGS_ALL 0x1u

/* Event kinds (EVENT) and SUBSCRIBE mask bits (1u << kind). */
enum coop_event_kind {
  COOP_EV_RELEASED = 1, /* the scheduler took the task (instance) */
  COOP_EV_GATHERED = 2, /* its workgroups are gathered */
  COOP_EV_STARTED = 3,
  COOP_EV_FINISHED = 4 /* done, cancelled or refused: see state */
};
#define COOP_EV_ALL 0x1eu

struct coop_wire_hdr {
  uint16_t version;
  uint16_t type;
  uint32_t seq;
  uint32_t len; /* payload bytes */
};

/* Each message's fields: the COOP_SCHEMA_ list of its name (coop_schema.h). */
struct coop_msg_hello {
  COOP_SCHEMA_HELLO(COOP_SCHEMA_MEMBER)
};

/* uid, pid: the client's credentials as the daemon saw them; backend..workers
 * describe device 0 */
struct coop_msg_welcome {
  COOP_SCHEMA_WELCOME(COOP_SCHEMA_MEMBER)
};

/* One SUBMIT argument:
 *   u8 type; scalar types: u64 bits (the value zero-extended, so 32-bit
 *   types have the high 32 bits zero; f32/f64 as their IEEE bits); BUF: u8
 *   dir, u8 fd (index, or COOP_WIRE_FD_NONE for inline), u64 size, blob
 *   data (inline with IN in dir: exactly size bytes; otherwise empty).
 *   An inline buffer's size is at most COOP_WIRE_INLINE_MAX. */
struct coop_wire_arg {
  uint8_t type;
  uint64_t bits;
  uint8_t dir, fd;
  uint64_t size;       /* buf: its size; devbuf_io: the range's length */
  uint64_t at, off;    /* devbuf_io: the range's start in the buffer, and in the descriptor */
  const uint8_t *data; /* inline IN data, into the payload */
  uint32_t data_len;
};

/* SUBMIT, then nargs x arg.
 * period_us == 0: one task (count and duration_ms must be 0).
 * period_us > 0: a periodic job, one instance released every period until
 * `count` instances (0 = no limit) or `duration_ms` (0 = no limit) is
 * reached, at least one of them non-zero. deadline_us (0 = none): an
 * instance whose finish comes later than release + deadline is a miss.
 * device: < ndevices, or COOP_WIRE_ANY_DEVICE. */
struct coop_msg_submit {
  COOP_SCHEMA_SUBMIT(COOP_SCHEMA_MEMBER)
  struct coop_wire_arg args[COOP_WIRE_MAX_ARGS];
};

/* ACCEPTED: u64 job */
/* STATUS: u64 job (0 = every job this client may see) */
/* WAIT: u64 job, u32 timeout_ms (COOP_WAIT_FOREVER) */
/* CANCEL: u64 job */
/* MIGRATE: u64 job, u8 device */
struct coop_msg_migrate {
  COOP_SCHEMA_MIGRATE(COOP_SCHEMA_MEMBER)
};
/* STATS, KERNELS: empty payload */
/* TOP: u8 device */
struct coop_msg_top {
  COOP_SCHEMA_TOP(COOP_SCHEMA_MEMBER)
};
/* SUBSCRIBE: u32 mask (COOP_EV_* bits, none outside COOP_EV_ALL; 0
 * unsubscribes) */
/* OK: empty payload */
struct coop_msg_job { /* timeout_ms: WAIT only */
  COOP_SCHEMA_WAIT(COOP_SCHEMA_MEMBER)
};
struct coop_msg_subscribe {
  COOP_SCHEMA_SUBSCRIBE(COOP_SCHEMA_MEMBER)
};

/* Device buffers (PROTOCOL.md): BUF_CREATE, then a blob of the initial
 * bytes (size of them; empty: zeros, or fd names a descriptor holding
 * them); BUF_WRITE and BUF_READ, a range [offset, offset + len) of a
 * buffer: WRITE then a blob of len bytes (empty with a descriptor), READ's
 * reply BUF_DATA a blob (empty when they were written into the request's
 * descriptor). Inline bytes are at most COOP_WIRE_INLINE_MAX. */
struct coop_msg_buf_create {
  COOP_SCHEMA_BUF_CREATE(COOP_SCHEMA_MEMBER)
  const uint8_t *data; /* into the payload */
  uint32_t data_len;
};
struct coop_msg_buf_range { /* BUF_WRITE (data), BUF_READ (no blob) */
  COOP_SCHEMA_BUF_RANGE(COOP_SCHEMA_MEMBER)
  const uint8_t *data;
  uint32_t data_len;
};
struct coop_msg_buf_free {
  COOP_SCHEMA_BUF_FREE(COOP_SCHEMA_MEMBER)
};
struct coop_msg_buffer {
  COOP_SCHEMA_BUFFER(COOP_SCHEMA_MEMBER)
};
struct coop_msg_buf_data {
  const uint8_t *data;
  uint32_t data_len;
};

/* ERROR: i32 code (coop_errno, always < 0), str message */
struct coop_msg_error {
  COOP_SCHEMA_ERROR(COOP_SCHEMA_MEMBER)
};

/* STATUS_REPLY: u32 n, n x record */
struct coop_wire_status {
  COOP_SCHEMA_STATUS(COOP_SCHEMA_MEMBER)
};
#define COOP_WIRE_MAX_STATUS 1024u
struct coop_msg_status_reply {
  COOP_SCHEMA_STATUS_REPLY(COOP_SCHEMA_MEMBER)
  const uint8_t *recs; /* the encoded records, into the payload */
  uint32_t recs_len;
};

/* Timings of one task or instance, ns of the daemon's CLOCK_MONOTONIC
 * (0 = did not happen), and gather_ns / exec_ns measured on the device
 * clock (-1 = not measured). */
#define COOP__WIRE_TIME(name) int64_t name;
struct coop_wire_times {
  COOP_TIMES_MAP(COOP__WIRE_TIME)
};

/* An instance of a periodic job, a fixed-size record in RESULT */
struct coop_wire_inst {
  COOP_SCHEMA_INST(COOP_SCHEMA_MEMBER)
};
#define COOP_WIRE_INST_BYTES (0u COOP_SCHEMA_INST(COOP_SCHEMA_LEN)) /* 57 */

/* RESULT: its list, ninst x inst record, u8 nbuf,
 * nbuf x (u8 arg, blob data): the contents of inline OUT/INOUT buffers
 * (arg: the SUBMIT argument's index, < COOP_WIRE_MAX_ARGS; data at most
 * COOP_WIRE_INLINE_MAX bytes; memfd buffers are written back in place
 * before RESULT is sent). */
struct coop_wire_outbuf {
  uint8_t arg;
  const uint8_t *data;
  uint32_t len;
};
struct coop_msg_result { /* device: where it ran */
  COOP_SCHEMA_RESULT(COOP_SCHEMA_MEMBER)
  const uint8_t *inst; /* ninst encoded records, into the payload */
  uint8_t nbuf;
  struct coop_wire_outbuf bufs[COOP_WIRE_MAX_ARGS];
};

/* STATS_REPLY: its list (gather_p50..gather_max: ns, over the last
 * `samples` non-cooperative task instances, -1 when none; backend_note:
 * which backend and device, and why: the reasons the others were passed
 * over; watchdog: the latest watchdog event, or ""), then ndevices x
 * devinfo. The fields before describe device 0 (gather percentiles and
 * counters: every device).
 * Then, from a daemon that sends it (ext = 1; an older one ends the reply
 * here, ext = 0): the ext list, nbounds x i64 bound (the gather
 * histogram's upper bounds, ns, ascending), and ndevices x devmetrics
 * ((nbounds + 1) x u64 gather_bucket between its two lists:
 * non-cumulative; the last counts the gathers above the last bound). */
struct coop_wire_devinfo { /* parked now (0/1), times parked, the last relaunch's ns or 0 */
  COOP_SCHEMA_DEVINFO(COOP_SCHEMA_MEMBER)
};
struct coop_wire_devmetrics {
  /* busy_workers: running or reserved for a job now; arena_*: the buffers
   * of its running jobs; deadline_*: instances with a deadline */
  COOP_SCHEMA_DEVMETRICS(COOP_SCHEMA_MEMBER)
  uint64_t gather_bucket[COOP_WIRE_MAX_BOUNDS + 1];
  COOP_SCHEMA_DEADLINES(COOP_SCHEMA_MEMBER)
};
struct coop_msg_stats_reply {
  COOP_SCHEMA_STATS(COOP_SCHEMA_MEMBER)
  struct coop_wire_devinfo devs[COOP_WIRE_MAX_DEVICES];
  uint8_t ext; /* the fields below are on the wire */
  COOP_SCHEMA_STATS_EXT(COOP_SCHEMA_MEMBER)
  int64_t bound[COOP_WIRE_MAX_BOUNDS];
  struct coop_wire_devmetrics met[COOP_WIRE_MAX_DEVICES];
};

/* KERNEL_LIST: u32 n, n x (its list, nargs x (u8 arg type, str arg name
 * < COOP_WIRE_ARGNAME_MAX, "" when unnamed, u8 element type), u8 nrules,
 * nrules x str rule < COOP_WIRE_RULE_MAX) */
struct coop_wire_kernel {
  COOP_SCHEMA_KERNEL(COOP_SCHEMA_MEMBER)
  uint8_t types[COOP_WIRE_MAX_ARGS];
  char argnames[COOP_WIRE_MAX_ARGS][COOP_WIRE_ARGNAME_MAX];
  uint8_t elems[COOP_WIRE_MAX_ARGS]; /* enum coop_elem_type; ANY for a scalar */
  uint8_t nrules;
  char rules[COOP_WIRE_MAX_RULES][COOP_WIRE_RULE_MAX];
};
#define COOP_WIRE_MAX_KERNELS 256u
struct coop_msg_kernel_list {
  COOP_SCHEMA_KERNEL_LIST(COOP_SCHEMA_MEMBER)
  const uint8_t *recs; /* into the payload */
  uint32_t recs_len;
};

/* KERNEL_ADD: file (the author's name for it, for messages), then a blob
 * of the source, at most COOP_WIRE_SOURCE_MAX bytes (COOP_ETOOBIG past it).
 * KERNEL_REMOVE: the kernel's name. RELOAD: empty. */
struct coop_msg_kernel_add {
  COOP_SCHEMA_KERNEL_ADD(COOP_SCHEMA_MEMBER)
  const uint8_t *source; /* into the payload */
  uint32_t source_len;
};
struct coop_msg_kernel_remove {
  COOP_SCHEMA_KERNEL_REMOVE(COOP_SCHEMA_MEMBER)
};
/* KERNEL_DONE: error (0: done), the kernels in the set now, then a blob of
 * the log (at most COOP_WIRE_LOG_MAX bytes), then with has_kernel one
 * kernel record (KERNEL_ADD's kernel as it now runs). */
struct coop_msg_kernel_done {
  COOP_SCHEMA_KERNEL_DONE(COOP_SCHEMA_MEMBER)
  const uint8_t *log; /* into the payload; not NUL-terminated */
  uint32_t log_len;
  struct coop_wire_kernel kernel;
};

/* EVENT: t_ns on the daemon's CLOCK_MONOTONIC, gather_ns -1 unless kind is
 * GATHERED or later */
struct coop_msg_event {
  COOP_SCHEMA_EVENT(COOP_SCHEMA_MEMBER)
};

/* TOP_REPLY: the device as the scheduler last published it (every few ms):
 *   u32 nwg, nwg x wg: one record per worker workgroup, in participant
 *     order; state COOP_WG_*; job 0 unless RUNNING or RESERVED and the job
 *     is visible to the client;
 *   u32 njobs, njobs x topjob: the client's running jobs
 *     (every job for root); m is the active count M of a cooperative
 *     kernel (K for a non-cooperative one), workers the workgroups it holds
 *     now, kills and forks so far. */
enum coop_wg_state {
  COOP_WG_FREE = 0,     /* idle, available to the scheduler */
  COOP_WG_RUNNING = 1,  /* runs a workgroup of job */
  COOP_WG_RESERVED = 2, /* taken back from cooperative job, kept for its forks */
  COOP_WG_OTHER = 3,    /* running or reserved for a job the client may not see */
};
struct coop_wire_wg {
  COOP_SCHEMA_WG(COOP_SCHEMA_MEMBER)
};
struct coop_wire_topjob {
  COOP_SCHEMA_TOPJOB(COOP_SCHEMA_MEMBER)
};
#define COOP_WIRE_MAX_WG 4096u
#define COOP_WIRE_MAX_TOPJOBS 1024u
struct coop_msg_top_reply {
  uint32_t nwg;
  const uint8_t *wgs; /* the encoded records, into the payload */
  uint32_t wgs_len;
  uint32_t njobs;
  const uint8_t *jobs;
  uint32_t jobs_len;
};

union coop_msg {
  struct coop_msg_hello hello;
  struct coop_msg_welcome welcome;
  struct coop_msg_submit submit;
  struct coop_msg_job job; /* ACCEPTED, STATUS, WAIT, CANCEL */
  struct coop_msg_subscribe subscribe;
  struct coop_msg_error error;
  struct coop_msg_status_reply status_reply;
  struct coop_msg_result result;
  struct coop_msg_stats_reply stats;
  struct coop_msg_kernel_list kernels;
  struct coop_msg_event event;
  struct coop_msg_top_reply top;
  struct coop_msg_top top_req;
  struct coop_msg_buf_create buf_create;
  struct coop_msg_buf_range buf_range; /* BUF_WRITE, BUF_READ */
  struct coop_msg_buf_free buf_free;
  struct coop_msg_buffer buffer;
  struct coop_msg_buf_data buf_data;
  struct coop_msg_kernel_add kernel_add;
  struct coop_msg_kernel_remove kernel_remove;
  struct coop_msg_kernel_done kernel_done;
  struct coop_msg_migrate migrate;
};

/* ---- growable output buffer ---- */
struct coop_wire_buf {
  uint8_t *p;
  size_t len, cap;
  int err; /* sticky: first error while building (COOP_ENOMEM / COOP_ETOOBIG /
            * COOP_EINVAL); every later encode or put returns it and appends
            * nothing. A failed call appends nothing either, so p[0..len) holds
            * only whole frames (or records). Clear err to go on. */
};
void coop_wire_buf_init(struct coop_wire_buf *b);
void coop_wire_buf_free(struct coop_wire_buf *b);

/* ---- header ---- */
/* Parse the 16-byte header at b: COOP_EPROTO on a bad magic,
 * COOP_ETOOBIG if len > COOP_WIRE_MAX_PAYLOAD. The version is returned in
 * h->version unchecked (the caller answers EVERSION itself). */
int coop_wire_hdr_decode(const uint8_t *b, struct coop_wire_hdr *h);

/* ---- whole messages ---- */
/* Append one frame (header + payload) of `type` to b. The message's
 * pointer fields (inline data, records, out buffers) are copied in.
 * STATUS_REPLY, KERNEL_LIST and RESULT's instances are built with the
 * record encoders below into m->..recs / inst beforehand. m may be NULL for
 * the empty-payload types. The frame is checked with the decoder before it
 * is kept: COOP_ETOOBIG for a payload over COOP_WIRE_MAX_PAYLOAD, a string
 * that fills its array or a count over its limit; COOP_EINVAL for anything
 * else the decoder would refuse (unknown type or enum, record count that
 * does not match the records, ...). */
int coop_wire_encode(struct coop_wire_buf *b, uint16_t type, uint32_t seq, const union coop_msg *m);

/* Sets the seq of the whole frame at f (one coop_wire_encode wrote): a
 * frame kept for sending again (libcoop's last SUBMIT) goes out as a new
 * request. */
void coop_wire_set_seq(uint8_t *f, uint32_t seq);

/* Decode a payload of `type` (h from coop_wire_hdr_decode) into m. Unknown
 * types: COOP_EPROTO. Empty-payload types accept only len == 0. Malformed
 * input (short, trailing bytes, NUL in a string, unknown enum or flag, a
 * 32-bit scalar with high bits set, an ERROR code >= 0, a SUBSCRIBE mask
 * outside COOP_EV_ALL, inline data that does not match its buffer):
 * COOP_EPROTO; a string of length >= its field's max, a count over its
 * limit or an inline buffer over COOP_WIRE_INLINE_MAX: COOP_ETOOBIG. A
 * SUBMIT's fd indexes are checked against COOP_WIRE_MAX_FDS only: the
 * daemon checks them against the descriptors that came with the frame.
 * Only the member of m that `type` names is written (zeroed, then filled);
 * the union's other bytes are left as they were. */
int coop_wire_decode(const struct coop_wire_hdr *h, const uint8_t *payload, union coop_msg *m);

/* ---- records of the variable-length replies ---- */
int coop_wire_status_put(struct coop_wire_buf *recs, const struct coop_wire_status *s);
int coop_wire_kernel_put(struct coop_wire_buf *recs, const struct coop_wire_kernel *k);
int coop_wire_inst_put(struct coop_wire_buf *recs, const struct coop_wire_inst *i);
int coop_wire_wg_put(struct coop_wire_buf *recs, const struct coop_wire_wg *w);
int coop_wire_topjob_put(struct coop_wire_buf *recs, const struct coop_wire_topjob *j);
/* Iterate: *off starts at 0; returns 0 and advances, or COOP_EPROTO (also
 * past the last record). The decoder already validated every record, so
 * iteration of a decoded message never fails. The puts return 0, the
 * buffer's sticky error, or a new one (COOP_EINVAL for a record the
 * decoder would refuse, COOP_ETOOBIG past COOP_WIRE_MAX_PAYLOAD bytes). */
int coop_wire_status_next(const struct coop_msg_status_reply *r, uint32_t *off,
                          struct coop_wire_status *s);
int coop_wire_kernel_next(const struct coop_msg_kernel_list *r, uint32_t *off,
                          struct coop_wire_kernel *k);
int coop_wire_wg_next(const struct coop_msg_top_reply *r, uint32_t *off, struct coop_wire_wg *w);
int coop_wire_topjob_next(const struct coop_msg_top_reply *r, uint32_t *off,
                          struct coop_wire_topjob *j);
int coop_wire_inst_get(const struct coop_msg_result *r, uint32_t i, struct coop_wire_inst *out);

const char *coop_wire_type_name(uint16_t type);
const char *coop_job_state_name(uint8_t state);
const char *coop_arg_type_name(uint8_t type);
/* "u8", ..., "f64" for an element type, "" for COOP_WIRE_ELEM_ANY, "unknown"
 * past COOP_WIRE_ELEM_LAST; coop_elem_type_of: the type of such a name, -1 for
 * any other */
const char *coop_elem_type_name(uint8_t elem);
int coop_elem_type_of(const char *name);

/* ---- frame reader: bytes in, whole frames out (for non-blocking I/O) ----
 * Feed whatever recv() returned; take complete frames. A malformed header
 * makes the reader sticky-failed with the error. Descriptors received with
 * the bytes are queued and handed to the frame they arrived with: the last
 * frame whose first byte was in that recvmsg (Linux may glue earlier bytes
 * in front of the sendmsg() that carried descriptors, but ends the read
 * with it; coop_wire_send sends a frame with descriptors alone). Bytes with
 * descriptors but no frame start are a protocol error (COOP_EPROTO). The
 * caller owns handed-out descriptors and the reader closes those it still
 * holds when freed. */
struct coop_wire_reader {
  uint8_t *buf;
  size_t len, cap;
  int err;
  int fds[COOP_WIRE_MAX_FDS * 4];
  unsigned nfds;
  size_t off;                               /* bytes at buf's start already handed out */
  uint64_t frame;                           /* ordinal of the frame that starts at off */
  uint64_t fd_frame[COOP_WIRE_MAX_FDS * 4]; /* ordinal of the frame each fd came with */
  /* How the reader lets go of a descriptor it owns (a failed frame's, the
   * rest at free); NULL: close(2). A daemon hands those of a file a
   * process serves to a thread, whose close may wait for that process. */
  void (*close_fd)(int fd, void *arg);
  void *close_arg;
};
void coop_wire_reader_init(struct coop_wire_reader *r);
void coop_wire_reader_free(struct coop_wire_reader *r);
/* Append n bytes and nfds descriptors (received together). The reader owns
 * the descriptors from this call on, even when it fails (it closes them).
 * COOP_ETOOBIG if more than COOP_WIRE_MAX_FDS*4 descriptors would be
 * pending; COOP_EPROTO for descriptors with no frame start; every error is
 * sticky. */
int coop_wire_reader_feed(struct coop_wire_reader *r, const uint8_t *bytes, size_t n,
                          const int *fds, unsigned nfds);
/* If a whole frame is buffered: 1, with h, a pointer to its payload (valid
 * until the next call on r) and its descriptors moved to fds (room for
 * COOP_WIRE_MAX_FDS; *nfds of them). Descriptors past COOP_WIRE_MAX_FDS,
 * or all of them when fds is NULL, are closed: no SUBMIT can name them.
 * 0 if not yet; negative on a malformed header (and on every later call). */
int coop_wire_reader_next(struct coop_wire_reader *r, struct coop_wire_hdr *h,
                          const uint8_t **payload, int *fds, unsigned *nfds);

/* ---- socket helpers (blocking or non-blocking fds) ---- */
/* sendmsg all of buf (MSG_NOSIGNAL) with fds (SCM_RIGHTS) on the first
 * chunk; retries on EINTR. With descriptors, buf must be exactly one frame
 * (COOP_EINVAL otherwise), so the receiver can tell which frame owns them.
 * On EAGAIN (non-blocking sock) it returns 0 with the bytes sent so far in
 * *sent: the caller polls for POLLOUT and sends buf + *sent with no fds, or
 * with the same fds again if *sent is 0 (they go with the first byte).
 * *sent is set on every return (NULL allowed for blocking sockets: EAGAIN
 * is then COOP_ETIMEDOUT). Returns 0, COOP_ECLOSED (EPIPE, ECONNRESET),
 * COOP_EIO (other errors), COOP_ETOOBIG (nfds > COOP_WIRE_MAX_FDS). */
int coop_wire_send(int sock, const uint8_t *buf, size_t len, const int *fds, unsigned nfds,
                   size_t *sent);
/* recvmsg up to cap bytes and any descriptors (MSG_CMSG_CLOEXEC) into fds
 * (room for COOP_WIRE_MAX_FDS; more are closed; fds == NULL: none are
 * accepted). Returns bytes (> 0), 0 on EOF, COOP_ECLOSED on ECONNRESET,
 * COOP_EIO on other errors, COOP_ETIMEDOUT (EAGAIN) when non-blocking and
 * nothing is there. */
long coop_wire_recv(int sock, uint8_t *buf, size_t cap, int *fds, unsigned *nfds);
/* The same, never waiting (MSG_DONTWAIT) on a blocking socket: a spin's
 * one call a look, where poll then recvmsg took two. */
long coop_wire_try_recv(int sock, uint8_t *buf, size_t cap, int *fds, unsigned *nfds);

#endif /* COOP_WIRE_H */
