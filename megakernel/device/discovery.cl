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
 *
 * The spread order (CUDA): a task takes the free workers of lowest id, so
 * ids are handed out SM by SM, round-robin: the first workers of every SM,
 * then the second ones, and so on. A task of K workers then lands on K
 * different SMs while K <= the SM count, and never more than one worker
 * above the even share on any SM, as a plain launch of K blocks does.
 * Ticket order alone scattered them at random (all workgroups race for
 * the lock): the SM with the most of a task's workers set its time, and a
 * matmul of 264 workers ran 1.0x or 1.2x its plain time from launch to
 * launch. Within an SM the ranks take its sub-partition classes in turn
 * (coop__spread). Each participant records its SM and its first warp's
 * slot beside its ticket (under the lock); ticket 0, once the poll is
 * closed, ranks the tickets and stores
 * disc_mapped (release); the others wait for it (relaxed loads, then an
 * acquire fence) and read their id. Ticket 0 stays the scheduler.
 */

#define COOP_NOT_PARTICIPATING 0xffffffffu

#ifdef COOP_HAVE_SMID
/* Workgroups of 64 threads in warp slots {0,1} and {4,5} of one SM share
 * two of its four warp schedulers while the other two idle; in {0,1} and
 * {2,3} they have one each: the first warp's slot names its class
 * (shared.h, coop__sp_classes). Workgroups of four warps or more (or
 * three) take every scheduler: one class. */
COOP_FN coop_u32 coop__warps(void) { return (coop_local_size() + 31u) / 32u; }

/* Ticket 0, the poll closed: n tickets, disc_sm[t] = SM * COOP_SPREAD_CLS
 * + class. A ticket's rank is its place on its SM in an order that takes
 * the SM's classes in turn (class 0, 1, .., then each again while it has
 * tickets left), so that the first workers of an SM, those a task of one
 * or two a SM runs on, sit on different schedulers where the SM has them.
 * By arrival order alone a matmul of 264 workers, two an SM, ran 0.240 or
 * 0.258 ms from one launch to the next on an H200, fixed within a launch
 * (bench/RESULTS.md, "A frame loop's SUBMIT checked ahead"). Ranks stay
 * dense on each SM (0..its count - 1), so a task of K <= SMs workers still
 * lands on K SMs. ids go by rank, then ticket (a counting sort: disc_sm[t]
 * holds t's rank once ranked). */
COOP_FN void coop__spread(COOP_GLOBAL struct coop_dev *dev, coop_u32 n, coop_u32 ncls) {
  dev->disc_pid[0] = 0u;
  /* each ticket's turn j among its SM's tickets of its class */
  for (coop_u32 t = 1u; t < n; t++) {
    coop_u32 sm = (dev->disc_sm[t] / COOP_SPREAD_CLS) % COOP_SPREAD_SMS;
    coop_u32 c = dev->disc_sm[t] % COOP_SPREAD_CLS;
    if (c >= ncls) c = ncls - 1u;
    coop_u32 j = dev->spread_cls[sm * COOP_SPREAD_CLS + c]++;
    dev->disc_sm[t] = (j * COOP_SPREAD_CLS + c) * COOP_SPREAD_SMS + sm;
  }
  /* its place in the turns (shared.h, coop__sp_rank) */
  for (coop_u32 t = 1u; t < n; t++) {
    coop_u32 sm = dev->disc_sm[t] % COOP_SPREAD_SMS, jc = dev->disc_sm[t] / COOP_SPREAD_SMS;
    coop_u32 m[COOP_SPREAD_CLS];
    for (coop_u32 k = 0u; k < COOP_SPREAD_CLS; k++)
      m[k] = dev->spread_cls[sm * COOP_SPREAD_CLS + k];
    coop_u32 r = coop__sp_rank(m, ncls, jc / COOP_SPREAD_CLS, jc % COOP_SPREAD_CLS);
    if (r >= COOP_SPREAD_RANKS) r = COOP_SPREAD_RANKS - 1u;
    dev->disc_sm[t] = r;
    dev->spread_rank[r]++;
  }
  coop_u32 next = 1u;
  for (coop_u32 r = 0u; r < COOP_SPREAD_RANKS; r++) {
    coop_u32 k = dev->spread_rank[r];
    dev->spread_rank[r] = next;
    next += k;
  }
  for (coop_u32 t = 1u; t < n; t++) dev->disc_pid[t] = dev->spread_rank[dev->disc_sm[t]]++;
}
#endif

/* Thread 0 only. Returns the participant id, or COOP_NOT_PARTICIPATING. */
COOP_FN coop_u32 coop__discover(COOP_GLOBAL struct coop_mailbox *mb,
                                COOP_GLOBAL struct coop_dev *dev) {
  coop_u32 ticket = COOP_NOT_PARTICIPATING;
  coop__lock(&dev->disc_lock);
  if (coop_ld_rlx(&dev->disc_open) != 0u) {
    ticket = coop_ld_rlx(&dev->disc_count);
    coop_st_rlx(&dev->disc_count, ticket + 1u);
#ifdef COOP_HAVE_SMID
    dev->disc_sm[ticket] =
        coop_smid() * COOP_SPREAD_CLS +
        coop_warp_slot() % COOP_SPREAD_CLS / (COOP_SPREAD_CLS / coop__sp_classes(coop__warps()));
#endif
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
    coop_u32 n = coop_ld_rlx(&dev->disc_count);
    coop__unlock(&dev->disc_lock);
#ifdef COOP_HAVE_SMID
    coop__spread(dev, n, coop__sp_classes(coop__warps()));
    coop_st_rel(&dev->disc_mapped, 1u);
#else
    (void)n;
#endif
    return 0u;
  }
#ifdef COOP_HAVE_SMID
  while (coop_ld_rlx(&dev->disc_mapped) == 0u) coop_nap(COOP_IDLE_NAP_NS);
  coop_fence_acq(); /* acquires ticket 0's release of disc_mapped */
  return dev->disc_pid[ticket];
#else
  while (coop_ld_acq(&dev->disc_open) != 0u) {
  }
  return ticket;
#endif
}
