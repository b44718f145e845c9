/*
 * dump.c: coop_rt_dump, what the host can see of a running megakernel.
 *
 * For the moment a task does not finish: a test's timeout, the daemon's
 * watchdog. Everything here is read without synchronising with the device
 * (relaxed loads of the mailbox, a copy of device memory taken while the
 * kernel runs), so fields may be torn across each other; it says what state
 * each part was in, never why.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "rt_internal.h"

static const char *task_state(uint32_t s) {
  static const char *n[] = {"free", "submitted", "queued", "running",
                            "done", "cancelled", "refused"};
  return s < sizeof n / sizeof *n ? n[s] : "?";
}

static const char *kernel_name(const struct coop_rt *rt, uint32_t kid) {
  return kid < (uint32_t)rt->nkernels ? rt->kernels[kid].name : "?";
}

static void dump_tasks(const struct coop_rt *rt, FILE *f) {
  struct coop_mailbox *mb = rt->mb;
  for (unsigned s = 0; s < COOP_RING; s++) {
    struct coop_task_rec *t = &mb->tasks[s];
    uint32_t st = atomic_load_explicit(&t->state, memory_order_acquire);
    if (st == COOP_TS_FREE) continue;
    fprintf(f,
            "  task slot %u: %s kernel %s%s groups %u; live M %u workers %u kills %u forks %u%s\n",
            s, task_state(st), kernel_name(rt, t->kid),
            (t->flags & COOP_TF_COOPERATIVE) ? " (cooperative)" : "", t->groups,
            atomic_load_explicit(&t->live_m, memory_order_relaxed),
            atomic_load_explicit(&t->live_workers, memory_order_relaxed),
            atomic_load_explicit(&t->live_kills, memory_order_relaxed),
            atomic_load_explicit(&t->live_forks, memory_order_relaxed),
            atomic_load_explicit(&t->cancel, memory_order_relaxed) ? ", cancel requested" : "");
  }
}

static const char *wstate(uint32_t s) {
  static const char *n[] = {"idle", "assigned", "returned", "exit"};
  return s < 4 ? n[s] : "?";
}

static void dump_chan(const struct coop_rt *rt, const struct coop_dev *d, unsigned c, FILE *f) {
  const struct coop_chan *ch = &d->chan[c];
  const struct coop_sched *s = &d->sched;
  fprintf(f,
          "  channel %u: task slot %u kernel %s N %u | M %u want_kill %u n_resv %u alive %u "
          "killed %u forked %u resizes %u ep_killed %u cancel %u lock %u | scheduler: workers "
          "%u resv %u killed_reaped %u last %u\n",
          c, ch->task, kernel_name(rt, ch->kid), ch->n_max, ch->m, ch->want_kill, ch->n_resv,
          ch->alive, ch->killed, ch->forked, ch->resizes, ch->ep_killed, ch->cancel, ch->lock,
          s->chan_workers[c], s->chan_resv[c], s->chan_killed_reaped[c], s->chan_last[c]);
  /* A count word's offset in its episode (modulo COOP__BAR_EP) tells how
   * many have arrived once the master has: EP minus the arrivals awaited
   * (barrier.cl). */
  fprintf(f,
          "    barrier: counts even 0x%08x (%u mod %u) odd 0x%08x (%u) held %u; deltas %d %d %d "
          "%d; last held release: generation %u, M %u\n",
          ch->bar_arrive, ch->bar_arrive % COOP__BAR_EP, COOP__BAR_EP, ch->bar_arrive_odd,
          ch->bar_arrive_odd % COOP__BAR_EP, ch->ep_hold, (int)ch->bar_delta[0],
          (int)ch->bar_delta[1], (int)ch->bar_delta[2], (int)ch->bar_delta[3],
          ch->bar_rel >> COOP__REL_SHIFT, COOP__REL_M(ch->bar_rel));
  /* Handing workers over (scheduler.cl): where its leaving workers go,
   * the ids its own task still has to give, those it handed on */
  fprintf(f, "    handoff to %d; ticket %u of %u; handed %u%s (%u killed), counted %u\n",
          (int)ch->handoff - 1, ch->ticket & 0xffffu, ch->ticket >> 16,
          ch->handed & ~COOP_HANDED_LAST, (ch->handed & COOP_HANDED_LAST) ? " with its last" : "",
          ch->handed_kills, s->chan_handed[c] & ~COOP_HANDED_LAST);
  /* Workers of this channel, grouped by (state, forked). */
  unsigned hist[4][2] = {{0}};
  for (unsigned pid = 1; pid <= s->nworkers && pid < COOP_MAX_WG; pid++) {
    if (s->wstat[pid] != c) continue;
    const struct coop_worker *w = &d->w[pid];
    hist[w->state & 3][w->forked ? 1 : 0]++;
  }
  for (unsigned a = 0; a < 4; a++)
    for (unsigned k = 0; k < 2; k++)
      if (hist[a][k])
        fprintf(f, "    %u workers %s%s\n", hist[a][k], wstate(a), k ? ", forked" : "");
  /* The ids around M, where kills and forks happen. */
  unsigned m = ch->m < COOP_MAX_WG ? ch->m : COOP_MAX_WG;
  for (unsigned v = m > 4 ? m - 4 : 0; v < m; v++) {
    unsigned pid = ch->pid_of[v];
    if (pid >= COOP_MAX_WG) continue;
    const struct coop_worker *w = &d->w[pid];
    fprintf(f, "    id %u -> worker %u: %s vid %u chan %u\n", v, pid, wstate(w->state), w->vid,
            w->chan);
  }
}

static void dump_dev(const struct coop_rt *rt, const struct coop_dev *d, FILE *f) {
  const struct coop_sched *s = &d->sched;
  unsigned free_ = 0, resv = 0, busy = 0;
  for (unsigned pid = 1; pid <= s->nworkers && pid < COOP_MAX_WG; pid++) {
    uint32_t w = s->wstat[pid];
    if (w == COOP_SW_FREE)
      free_++;
    else if (w & 0x80000000u)
      resv++;
    else
      busy++;
  }
  fprintf(f,
          "  scheduler: %u workers (%u free by count, %u free / %u reserved / %u busy by map), "
          "queue %u..%u, ring tail %u; pending channel %d, handed over %u of %u counted\n",
          s->nworkers, s->nfree, free_, resv, busy, s->q_head, s->q_tail, s->sub_tail,
          (int)s->pend - 1, s->handed_seen, s->handed_owed);
  for (unsigned q = s->q_head; q != s->q_tail && q - s->q_head < 8; q++)
    fprintf(f, "  queued: slot %u\n", s->queue[q % COOP_RING]);
  for (unsigned c = 0; c < COOP_MAX_CHANNELS; c++)
    if ((s->busy >> c) & 1u) dump_chan(rt, d, c, f);
}

int coop_rt_dump(coop_rt *rt, FILE *f) {
  if (!rt || !f) return COOP_EINVAL;
  if (!rt->mb) {
    fprintf(f, "coop: megakernel not launched\n");
    return 0;
  }
  struct coop_mailbox *mb = rt->mb;
  fprintf(f, "coop: megakernel on %s (%s): scheduler state %u, %u participants, ring head %u%s\n",
          rt->device_name, rt->ops->name,
          atomic_load_explicit(&mb->sched_state, memory_order_acquire),
          atomic_load_explicit(&mb->participants, memory_order_relaxed),
          atomic_load_explicit(&mb->sub_head, memory_order_relaxed),
          atomic_load_explicit(&mb->shutdown, memory_order_relaxed) ? ", shutdown requested" : "");
  dump_tasks(rt, f);
  if (!rt->ops->read_dev) {
    fprintf(f, "  (the %s backend cannot read device memory while the megakernel runs)\n",
            rt->ops->name);
    return 0;
  }
  struct coop_dev *d = malloc(sizeof *d);
  if (!d) return COOP_ENOMEM;
  int r = rt->ops->read_dev(rt, d, sizeof *d);
  if (r == 0)
    dump_dev(rt, d, f);
  else
    fprintf(f, "  device memory unreadable: %s\n", rt->msg);
  free(d);
  return r;
}
