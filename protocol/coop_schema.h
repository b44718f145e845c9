/*
 * coop_schema.h: the fields of the wire's messages and of a job's result,
 * each declared once (PROTOCOL.md says what they mean). Like coop_errno.h's
 * error list, these are X-macro lists; from them come wire.h's structs,
 * wire.c's encoders, decoders and record lengths, and the copies of a result
 * on its way from the device to a client: coop_task_rec -> coop_rt_task_info
 * (runtime.c) -> struct job (the daemon) -> coop_msg_result (the wire) ->
 * coop_result (libcoop), each one expansion of the lists below.
 *
 * A message list has one entry per field, in wire order: XX(kind, name, arg).
 * The kind is the wire type and what a decoder accepts:
 *   U8 U16 U32 U64 I32 I64  any value (big-endian, two's complement)
 *   NAME, TEXT              str (u16 length + bytes), < COOP_NAME_MAX or
 *                           < COOP_TEXT_MAX bytes, no NUL
 *   TIMES                   struct coop_wire_times: COOP_TIMES_MAP's i64s
 *   STATE                   u8, an enum coop_job_state
 *   FLAGS                   u8, COOP_SUBMIT_* bits only
 *   BUFFLAGS                u8, COOP_BUFFER_* bits only
 *   BOOL                    u8, 0 or 1
 *   EVKIND                  u8, an enum coop_event_kind
 *   EVMASK                  u32, COOP_EV_ALL bits only
 *   WGSTATE                 u8, an enum coop_wg_state
 *   ERRCODE                 i32, a coop_errno (< 0)
 *   NDEV                    u8, 1..COOP_MAX_DEVICES
 *   COUNT8, COUNT32         u8 or u32, how many of what follows the list:
 *                           at most `arg` (COOP_ETOOBIG past it)
 * `arg` is a count's bound, a result counter's merge rule
 * (COOP_COUNTERS_MAP), and 0 for the other fields. What follows a list's
 * last count (arguments, records, buffers) is coded by hand in wire.c.
 */
#ifndef COOP_SCHEMA_H
#define COOP_SCHEMA_H

#include "coop_limits.h"

/* ---- a result's times and counters ---- */

/* The instants of a task or instance, ns of the daemon's CLOCK_MONOTONIC
 * (0 = did not happen). The device stamps all but `submitted` (its clock,
 * mapped to the host's by the runtime). coop_rt_task_info names them t_X. */
#define COOP_DEVICE_STAMPS_MAP(XX) XX(released) XX(gathered) XX(started) XX(finished)
#define COOP_STAMPS_MAP(XX) XX(submitted) COOP_DEVICE_STAMPS_MAP(XX)
/* Spans measured on the device clock, ns (-1 = not measured). */
#define COOP_SPANS_MAP(XX) XX(gather_ns) XX(exec_ns)
/* struct coop_wire_times and struct coop_times: i64 each, in this order. */
#define COOP_TIMES_MAP(XX) COOP_STAMPS_MAP(XX) COOP_SPANS_MAP(XX)

/* A task's workgroup counters (cooperative kernels: the active count M and
 * how it changed), the same names from coop_task_rec to coop_result. The
 * rule says how a job's counter takes in each of its tasks' (a periodic
 * job has one task per instance): COOP_MERGE_<rule>(job's, task's). */
/* The lists keep the lines they are written in (fields that belong
 * together share one), which clang-format would reflow. */
/* clang-format off */
#define COOP_COUNTERS_MAP(XX) \
  XX(U32, m_initial, LAST) XX(U32, m_min, MIN) XX(U32, m_max, MAX) \
  XX(U32, kills, SUM) XX(U32, forks, SUM) XX(U32, resizes, SUM)
/* clang-format on */
#define COOP_MERGE_LAST(dst, v) ((dst) = (v))
#define COOP_MERGE_SUM(dst, v) ((dst) += (v))
#define COOP_MERGE_MIN(dst, v) ((v) && (v) < (dst) ? (void)((dst) = (v)) : (void)0) /* 0: none */
#define COOP_MERGE_MAX(dst, v) ((v) > (dst) ? (void)((dst) = (v)) : (void)0)

/* ---- requests ---- */

/* clang-format off */
#define COOP_SCHEMA_HELLO(XX) \
  XX(U16, min_version, 0) XX(U16, max_version, 0) XX(NAME, name, 0)

/* Then nargs x argument (wire.h, struct coop_wire_arg). */
#define COOP_SCHEMA_SUBMIT(XX) \
  XX(NAME, kernel, 0) XX(FLAGS, flags, 0) XX(U32, groups, 0) \
  XX(U32, period_us, 0) XX(U32, count, 0) XX(U32, duration_ms, 0) XX(U32, deadline_us, 0) \
  XX(U8, device, 0) XX(I32, priority, 0) XX(COUNT8, nargs, COOP_MAX_ARGS)

/* ACCEPTED, STATUS, CANCEL; WAIT adds its timeout (struct coop_msg_job). */
#define COOP_SCHEMA_JOB(XX) XX(U64, job, 0)
#define COOP_SCHEMA_WAIT(XX) COOP_SCHEMA_JOB(XX) XX(U32, timeout_ms, 0)
#define COOP_SCHEMA_SUBSCRIBE(XX) XX(EVMASK, mask, 0)
#define COOP_SCHEMA_TOP(XX) XX(U8, device, 0)

/* Device buffers (PROTOCOL.md, "Device buffers"): CREATE and WRITE are
 * followed by a blob of the bytes (empty when they come by descriptor, fd
 * != COOP_WIRE_FD_NONE; CREATE: also empty for zeros). */
#define COOP_SCHEMA_BUF_CREATE(XX) \
  XX(U8, device, 0) XX(BUFFLAGS, flags, 0) XX(U64, size, 0) XX(U8, fd, 0)
#define COOP_SCHEMA_BUF_RANGE(XX) \
  XX(U64, buffer, 0) XX(U64, offset, 0) XX(U64, len, 0) XX(U8, fd, 0)
#define COOP_SCHEMA_BUF_FREE(XX) XX(U64, buffer, 0)

/* Kernel authors (PROTOCOL.md, "Kernel authors"): KERNEL_ADD is followed
 * by a blob of the source (at most COOP_WIRE_SOURCE_MAX bytes); file is the
 * name the author's messages give it (a base name). */
#define COOP_SCHEMA_KERNEL_ADD(XX) XX(NAME, file, 0)
#define COOP_SCHEMA_KERNEL_REMOVE(XX) XX(NAME, name, 0)
/* MIGRATE (PROTOCOL.md, "MIGRATE"): a cooperative job to another device. */
#define COOP_SCHEMA_MIGRATE(XX) XX(U64, job, 0) XX(U8, device, 0)

/* ---- replies ---- */

#define COOP_SCHEMA_WELCOME(XX) \
  XX(U16, version, 0) XX(NAME, daemon_version, 0) \
  XX(NAME, backend, 0) XX(TEXT, device, 0) XX(U32, compute_units, 0) XX(U32, workers, 0) \
  XX(U32, max_payload, 0) XX(U32, inline_max, 0) XX(U32, uid, 0) XX(U32, pid, 0) \
  XX(NDEV, ndevices, 0)

#define COOP_SCHEMA_ERROR(XX) XX(ERRCODE, code, 0) XX(TEXT, message, 0)

/* BUFFER answers BUF_CREATE; BUF_DATA answers BUF_READ (then a blob: the
 * bytes, empty when they went into the request's descriptor). */
#define COOP_SCHEMA_BUFFER(XX) XX(U64, buffer, 0) XX(U8, device, 0) XX(U64, size, 0)

/* STATUS_REPLY: n, then n x COOP_SCHEMA_STATUS records. */
#define COOP_SCHEMA_STATUS_REPLY(XX) XX(COUNT32, n, COOP_WIRE_MAX_STATUS)
#define COOP_SCHEMA_STATUS(XX) \
  XX(U64, job, 0) XX(STATE, state, 0) XX(FLAGS, flags, 0) XX(NAME, kernel, 0) \
  XX(U32, groups, 0) XX(U32, uid, 0) XX(U32, pid, 0) XX(U32, instances_done, 0) \
  XX(U32, misses, 0) XX(I32, priority, 0) XX(BOOL, suspended, 0) XX(U8, device, 0)

/* RESULT: then ninst x COOP_SCHEMA_INST records, and the inline OUT
 * buffers (u8 nbuf, nbuf x (u8 arg, blob data)). */
#define COOP_SCHEMA_RESULT(XX) \
  XX(U64, job, 0) XX(STATE, state, 0) XX(U8, device, 0) XX(I32, error, 0) XX(TEXT, message, 0) \
  XX(TIMES, t, 0) COOP_COUNTERS_MAP(XX) \
  XX(U32, instances, 0) XX(U32, misses, 0) XX(COUNT32, ninst, COOP_MAX_INSTANCES)
#define COOP_SCHEMA_INST(XX) XX(STATE, state, 0) XX(TIMES, t, 0)

/* STATS_REPLY: then ndevices x COOP_SCHEMA_DEVINFO; then, from a daemon
 * that sends it, the tail: COOP_SCHEMA_STATS_EXT, nbounds x i64 bound and
 * ndevices x (COOP_SCHEMA_DEVMETRICS, (nbounds + 1) x u64 bucket,
 * COOP_SCHEMA_DEADLINES). */
#define COOP_SCHEMA_STATS(XX) \
  XX(NAME, backend, 0) XX(TEXT, device, 0) XX(U32, compute_units, 0) XX(U32, workers, 0) \
  XX(U32, clients, 0) XX(U32, queued, 0) XX(U32, running, 0) \
  XX(U64, submitted, 0) XX(U64, done, 0) XX(U64, cancelled, 0) \
  XX(U64, refused, 0) XX(U64, failed, 0) \
  XX(U32, samples, 0) \
  XX(I64, gather_p50, 0) XX(I64, gather_p90, 0) XX(I64, gather_p99, 0) XX(I64, gather_max, 0) \
  XX(TEXT, backend_note, 0) XX(U32, gather_timeouts, 0) XX(U32, hung, 0) XX(U32, lost_workers, 0) \
  XX(TEXT, watchdog, 0) XX(COUNT8, ndevices, COOP_MAX_DEVICES)
#define COOP_SCHEMA_DEVINFO(XX) \
  XX(TEXT, device, 0) XX(NAME, backend, 0) XX(U32, compute_units, 0) XX(U32, workers, 0) \
  XX(U32, lost_workers, 0) XX(U32, jobs, 0) \
  XX(U32, parked, 0) XX(U32, parks, 0) XX(I64, unpark_ns, 0)
#define COOP_SCHEMA_STATS_EXT(XX) \
  XX(NAME, daemon_version, 0) XX(U64, uptime_ns, 0) XX(COUNT8, nbounds, COOP_MAX_BOUNDS)
#define COOP_SCHEMA_DEVMETRICS(XX) \
  XX(U32, busy_workers, 0) XX(U64, arena_bytes, 0) XX(U64, arena_used, 0) XX(I64, gather_sum_ns, 0)
#define COOP_SCHEMA_DEADLINES(XX) XX(U64, deadline_instances, 0) XX(U64, deadline_misses, 0)

/* KERNEL_LIST: n, then n x (COOP_SCHEMA_KERNEL, nargs x (u8 argument type,
 * str argument name), u8 nrules, nrules x str rule). owner: the uid of the
 * author who added it, COOP_WIRE_SHIPPED for a kernel of coopd's own
 * directories. */
#define COOP_SCHEMA_KERNEL_LIST(XX) XX(COUNT32, n, COOP_WIRE_MAX_KERNELS)
#define COOP_SCHEMA_KERNEL(XX) \
  XX(NAME, name, 0) XX(BOOL, cooperative, 0) XX(U32, owner, 0) XX(COUNT8, nargs, COOP_MAX_ARGS)

/* KERNEL_DONE answers KERNEL_ADD, KERNEL_REMOVE and RELOAD once the reload
 * they asked for has ended: then a blob of the log (the compiler's or
 * checker's at the author's file and line; empty on success) and, with
 * has_kernel 1, one KERNEL_LIST record: the added kernel's signature. */
#define COOP_SCHEMA_KERNEL_DONE(XX) \
  XX(I32, error, 0) XX(U32, nkernels, 0) XX(BOOL, has_kernel, 0)

#define COOP_SCHEMA_EVENT(XX) \
  XX(U64, job, 0) XX(EVKIND, kind, 0) XX(STATE, state, 0) XX(U32, instance, 0) \
  XX(I64, t_ns, 0) XX(I64, gather_ns, 0)

/* TOP_REPLY: u32 nwg, nwg x COOP_SCHEMA_WG, u32 njobs, njobs x
 * COOP_SCHEMA_TOPJOB (two record lists: coded by hand). */
#define COOP_SCHEMA_WG(XX) XX(WGSTATE, state, 0) XX(U64, job, 0)
#define COOP_SCHEMA_TOPJOB(XX) \
  XX(U64, job, 0) XX(NAME, kernel, 0) XX(BOOL, cooperative, 0) \
  XX(U32, groups, 0) XX(U32, m, 0) XX(U32, workers, 0) XX(U32, kills, 0) XX(U32, forks, 0) \
  XX(I32, priority, 0)
/* clang-format on */

/* ---- what the lists generate ---- */

/* A struct member per field: struct x { COOP_SCHEMA_X(COOP_SCHEMA_MEMBER) }; */
#define COOP_SCHEMA_MEMBER(kind, name, arg) COOP__CTYPE_##kind name COOP__DIM_##kind;
#define COOP__CTYPE_U8 uint8_t
#define COOP__CTYPE_U16 uint16_t
#define COOP__CTYPE_U32 uint32_t
#define COOP__CTYPE_U64 uint64_t
#define COOP__CTYPE_I32 int32_t
#define COOP__CTYPE_I64 int64_t
#define COOP__CTYPE_NAME char
#define COOP__CTYPE_TEXT char
#define COOP__CTYPE_TIMES struct coop_wire_times
#define COOP__CTYPE_STATE uint8_t
#define COOP__CTYPE_FLAGS uint8_t
#define COOP__CTYPE_BUFFLAGS uint8_t
#define COOP__CTYPE_BOOL uint8_t
#define COOP__CTYPE_EVKIND uint8_t
#define COOP__CTYPE_EVMASK uint32_t
#define COOP__CTYPE_WGSTATE uint8_t
#define COOP__CTYPE_ERRCODE int32_t
#define COOP__CTYPE_NDEV uint8_t
#define COOP__CTYPE_COUNT8 uint8_t
#define COOP__CTYPE_COUNT32 uint32_t
#define COOP__DIM_NAME [COOP_NAME_MAX]
#define COOP__DIM_TEXT [COOP_TEXT_MAX]
#define COOP__DIM_U8
#define COOP__DIM_U16
#define COOP__DIM_U32
#define COOP__DIM_U64
#define COOP__DIM_I32
#define COOP__DIM_I64
#define COOP__DIM_TIMES
#define COOP__DIM_STATE
#define COOP__DIM_FLAGS
#define COOP__DIM_BUFFLAGS
#define COOP__DIM_BOOL
#define COOP__DIM_EVKIND
#define COOP__DIM_EVMASK
#define COOP__DIM_WGSTATE
#define COOP__DIM_ERRCODE
#define COOP__DIM_NDEV
#define COOP__DIM_COUNT8
#define COOP__DIM_COUNT32

/* The wire length of a fixed-size list (no strings):
 * (0u COOP_SCHEMA_X(COOP_SCHEMA_LEN)). */
#define COOP_SCHEMA_LEN(kind, name, arg) +COOP__LEN_##kind
#define COOP__ONE(name) +1u
#define COOP__LEN_U8 1u
#define COOP__LEN_U64 8u
#define COOP__LEN_STATE 1u
#define COOP__LEN_WGSTATE 1u
#define COOP__LEN_TIMES (8u * (0u COOP_TIMES_MAP(COOP__ONE)))

#endif /* COOP_SCHEMA_H */
