//@needs shared.h primitives.cl
/*
 * discovery.cl: the occupancy discovery protocol (thesis 000, Sec. 3.4).
 *
 * Polling phase, under disc_lock: if the poll is open, take ticket
 * disc_count++ and participate; else leave at once (non-participating).
 * Closing phase: the holder of ticket 0 closes the poll. The thesis found
 * recall poor on CPU OpenCL without a pause between the phases (Sec. 3.6.4);
 * ours is timed by the host: ticket 0 mirrors the count into the mailbox and
 * closes when the host, having seen the count stop growing for a window,
 * stores disc_close, or when every launched workgroup has joined.
 *
 * Safety is the thesis's argument unchanged: a workgroup participates only
 * if it polled before the poll closed, and every participant is spinning
 * (not finished) until then, so all participants are co-occupant.
 * Only ticket 0 reads host memory; the others spin on disc_open in device
 * memory. Lock: exchange-acquire / store-release, device scope.
 */

#define COOP_NOT_PARTICIPATING 0xffffffffu

/* Thread 0 only. Returns the participant id, or COOP_NOT_PARTICIPATING. */
COOP_FN coop_u32 coop__discover(COOP_GLOBAL struct coop_mailbox *mb,
                                COOP_GLOBAL struct coop_dev *dev) {
  coop_u32 ticket = COOP_NOT_PARTICIPATING;
  coop__lock(&dev->disc_lock);
  if (coop_ld_rlx(&dev->disc_open) != 0u) {
    ticket = coop_ld_rlx(&dev->disc_count);
    coop_st_rlx(&dev->disc_count, ticket + 1u);
  }
  coop__unlock(&dev->disc_lock);
  if (ticket == COOP_NOT_PARTICIPATING) return ticket;

  if (ticket == 0u) {
    for (;;) {
      coop_u32 n = coop_ld_acq(&dev->disc_count);
      coop_sys_st_rel(&mb->disc_seen, n);
      if (n >= mb->launched || coop_sys_ld_acq(&mb->disc_close) != 0u) break;
    }
    coop__lock(&dev->disc_lock);
    coop_st_rlx(&dev->disc_open, 0u);
    coop__unlock(&dev->disc_lock);
  } else {
    while (coop_ld_acq(&dev->disc_open) != 0u) {
    }
  }
  return ticket;
}
