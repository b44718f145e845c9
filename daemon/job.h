/*
 * job.h: one client job (a task, or a periodic series of task instances).
 *
 * Ownership: the loop thread creates a job and hands it to the device
 * thread (dev_submit); from then until the device thread posts it back as
 * finished, only the device thread writes the result fields below, and the
 * loop reads only the fields marked (imm) and the atomics. After the
 * hand-back the loop owns it all again.
 */
#ifndef COOPD_JOB_H
#define COOPD_JOB_H

#include <stdatomic.h>
#include <stdint.h>

#include "wire.h"

struct session;

struct job_arg {
  uint8_t type, dir;
  uint64_t bits; /* scalars */
  uint64_t size; /* buffers */
  int fd;        /* memfd buffer, or -1 */
  uint8_t *data; /* inline: IN bytes from the client, then OUT bytes back; an IN-only
                  * copy is freed when the job finishes (session_job_done) */
  uint64_t dev;  /* device thread: the arena copy's argument value + 1; 0: none */
};

struct job {
  /* (imm) set before dev_submit */
  uint64_t id;
  uint32_t uid, pid;
  int kernel_index; /* in the device's runtime */
  uint8_t device;   /* index into the daemon's devs[] */
  char kernel[COOP_WIRE_NAME_MAX];
  uint8_t flags;
  uint32_t groups, period_us, count, duration_ms, deadline_us;
  unsigned nargs;
  struct job_arg args[COOP_WIRE_MAX_ARGS];
  uint64_t bytes; /* charged to the owner and its uid: every buffer's size while in
                   * flight; once finished (loop), the inline bytes it still holds */

  /* shared: written by either thread with atomics */
  _Atomic uint8_t state;           /* enum coop_job_state */
  _Atomic uint32_t instances_done; /* for STATUS while it runs */
  _Atomic uint32_t misses_so_far;
  atomic_int cancel; /* loop -> device */

  /* result: device thread until hand-back */
  int32_t error;
  char message[256];
  struct coop_wire_times t;
  uint32_t m_initial, m_min, m_max, kills, forks, resizes;
  uint32_t misses;
  struct coop_wire_inst *inst; /* periodic jobs: every instance */
  uint32_t ninst;

  /* loop thread only */
  struct session *owner; /* NULL once its client has gone */
  struct job *next;      /* in the daemon's job list */
  /* device.c's queues (under its mutex) */
  struct job *dev_next;
  int finished; /* handed back */
};

void job_free(struct job *j);

#endif /* COOPD_JOB_H */
