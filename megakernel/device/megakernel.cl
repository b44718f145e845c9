//@needs discovery.cl scheduler.cl worker.cl
/*
 * megakernel.cl: the entry point (004 Sec. 4.1). Every hardware workgroup
 * runs discovery; non-participants leave at once; participant 0 becomes the
 * scheduler, the others workers. Thread 0 of the scheduler decides; on CUDA
 * the threads past its first warp are its helpers (scheduler.cl); the rest
 * of that workgroup waits at the final barrier.
 */

COOP_KERNEL_ENTRY void coop_megakernel(COOP_GLOBAL struct coop_mailbox *mb,
                                       COOP_GLOBAL struct coop_dev *dev,
                                       COOP_GLOBAL coop_u8 *arena) {
  COOP_SHARED_DECL struct coop_wgl wl;
  if (coop_local_id() == 0u) wl.vid = coop__discover(mb, dev);
  coop_wg_barrier();
  coop_u32 pid = wl.vid;
  coop_wg_barrier();
  if (pid == COOP_NOT_PARTICIPATING) return;
  if (pid == 0u) {
    if (coop_local_id() == 0u) coop__help_init(&dev->sched);
    coop_wg_barrier(); /* helpers start from a clean order word */
    if (coop_local_id() == 0u) {
      coop_u32 n;
      coop__lock(&dev->disc_lock);
      n = coop_ld_rlx(&dev->disc_count);
      coop__unlock(&dev->disc_lock);
      coop__scheduler(mb, dev, n);
    }
#ifdef COOP_SCHED_HELPERS
    else if (coop_local_id() >= COOP_HELP_FIRST)
      coop__sched_helper(mb, dev, coop_local_id() - COOP_HELP_FIRST);
#endif
    coop_wg_barrier();
    return;
  }
  coop__worker(mb, dev, arena, &wl, pid);
}
