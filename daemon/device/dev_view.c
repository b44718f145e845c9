/* dev_view.c: the live view for TOP (device.h, struct dev_view). */
#include <stdio.h>
#include <string.h>

#include "dev_internal.h"

static void publish(struct dev *d, const struct dev_view *v);

/* An idle device's view: no job, no owner, the workgroups' holds as last
 * read. Made here, without a request: the device process is asked at most
 * every DEV_VIEW_NS, idle or not (the idle device was asked at every pass,
 * so once a frame, right after its end). */
static void idle_view(struct dev *d) {
  struct dev_view *v = &d->next_view;
  for (unsigned i = 0; i < v->nwg; i++) {
    v->wg_job[i] = 0;
    v->wg_uid[i] = 0;
  }
  v->njobs = 0;
  publish(d, v);
}

/* The live view from the runtime's: workgroup owners and each running
 * task's M, mapped to jobs through the runs' task ids. Each build is a
 * DP_VIEW round trip, which holds the device thread while the device
 * process's thread wakes (100 us to 2.6 ms where it slept: bench/RESULTS.md,
 * "The live view every 100 ms"), so at most one every DEV_VIEW_NS; a
 * device that went idle meanwhile shows it at once (idle_view). */
void dev__build_view(struct dev *d, int64_t now) {
  uint64_t of = d->rt ? d->gen : 0; /* a new or no device process: read at once */
  if (d->view_at && d->view_of == of && now - d->view_at < DEV_VIEW_NS) {
    if (!d->runs && d->view_busy) idle_view(d);
    return;
  }
  d->view_at = now;
  d->view_of = of;
  struct dev_view *v = &d->next_view;
  coop_task_id *owner = d->wg_owner;
  v->nwg = 0;
  v->njobs = 0;
  if (d->rt) {
    int n = dp_view(d->rt, owner, v->wg_reserved, COOP_WIRE_MAX_WG);
    v->nwg = n > 0 ? (unsigned)n : 0;
  }
  for (unsigned i = 0; i < v->nwg; i++) {
    v->wg_job[i] = 0;
    v->wg_uid[i] = 0;
  }
  for (struct run *r = d->runs; r; r = r->next) {
    struct job *j = r->j;
    struct dev_view_job *vj = v->njobs < DEV_VIEW_JOBS ? &v->jobs[v->njobs] : NULL;
    if (vj && r->ninflight) {
      memset(vj, 0, sizeof *vj);
      vj->job = j->id;
      vj->uid = j->uid;
      snprintf(vj->kernel, sizeof vj->kernel, "%s", j->kernel);
      vj->cooperative = !!(j->flags & COOP_SUBMIT_COOPERATIVE);
      vj->groups = j->groups;
      vj->priority = j->priority;
      v->njobs++;
    } else {
      vj = NULL;
    }
    for (unsigned t = 0; t < r->ninflight; t++) {
      struct coop_rt_live l;
      if (vj && dp_task_live(d->rt, r->task[t], &l) == 0) {
        vj->m += l.m; /* a periodic job: its instances together */
        vj->workers += l.workers;
        vj->kills += l.kills;
        vj->forks += l.forks;
      }
      for (unsigned i = 0; i < v->nwg; i++)
        if (owner[i] == r->task[t]) {
          v->wg_job[i] = j->id;
          v->wg_uid[i] = j->uid;
        }
    }
  }
  publish(d, v);
}

/* v as TOP's view (under d->mu: TOP reads it on the loop thread). */
static void publish(struct dev *d, const struct dev_view *v) {
  d->view_busy = v->njobs != 0;
  for (unsigned i = 0; i < v->nwg && !d->view_busy; i++) d->view_busy = v->wg_job[i] != 0;
  pthread_mutex_lock(&d->mu);
  d->view.nwg = v->nwg;
  memcpy(d->view.wg_job, v->wg_job, v->nwg * sizeof v->wg_job[0]);
  memcpy(d->view.wg_uid, v->wg_uid, v->nwg * sizeof v->wg_uid[0]);
  memcpy(d->view.wg_reserved, v->wg_reserved, v->nwg);
  d->view.njobs = v->njobs;
  memcpy(d->view.jobs, v->jobs, v->njobs * sizeof v->jobs[0]);
  pthread_mutex_unlock(&d->mu);
}

void dev_view_get(struct dev *d, struct dev_view *v) {
  pthread_mutex_lock(&d->mu);
  v->nwg = d->view.nwg;
  memcpy(v->wg_job, d->view.wg_job, v->nwg * sizeof v->wg_job[0]);
  memcpy(v->wg_uid, d->view.wg_uid, v->nwg * sizeof v->wg_uid[0]);
  memcpy(v->wg_reserved, d->view.wg_reserved, v->nwg);
  v->njobs = d->view.njobs;
  memcpy(v->jobs, d->view.jobs, v->njobs * sizeof v->jobs[0]);
  pthread_mutex_unlock(&d->mu);
}
