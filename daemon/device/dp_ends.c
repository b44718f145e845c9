/*
 * dp_ends.c: see dp_ends.h.
 */
#include "dp_ends.h"

static unsigned slot_of(int kernel, unsigned groups) {
  return ((unsigned)kernel * 31u + groups) % DP_END_SLOTS;
}

int64_t dp_ends_expect(const struct dp_ends *e, int kernel, unsigned groups) {
  unsigned k = slot_of(kernel, groups);
  return e->slot[k].kernel == kernel && e->slot[k].groups == groups ? e->slot[k].ns : 0;
}

void dp_ends_note(struct dp_ends *e, int kernel, unsigned groups, int64_t ns) {
  unsigned k = slot_of(kernel, groups);
  e->slot[k].kernel = kernel;
  e->slot[k].groups = groups;
  e->slot[k].ns = ns > 0 ? ns : 0;
}

void dp_ends_submitted(struct dp_ends *e, coop_task_id id, int kernel, unsigned groups, int64_t now,
                       int frame) {
  int64_t ns = dp_ends_expect(e, kernel, groups);
  unsigned k = id & 0xffu;
  e->task[k].id = id;
  e->task[k].kernel = kernel;
  e->task[k].groups = groups;
  e->task[k].due = ns ? now + ns : 0;
  e->task[k].live = 1;
  e->task[k].frame = (uint8_t)(frame != 0);
}

int64_t dp_ends_due(const struct dp_ends *e, const coop_task_id *ids, unsigned n, int *frame) {
  int64_t due = 0;
  *frame = 0;
  for (unsigned i = 0; i < n; i++) {
    unsigned k = ids[i] & 0xffu;
    if (e->task[k].id != ids[i] || !e->task[k].live || !e->task[k].due) continue;
    if (!due || e->task[k].due < due) {
      due = e->task[k].due;
      *frame = e->task[k].frame;
    }
  }
  return due;
}

void dp_ends_seen(struct dp_ends *e, coop_task_id id, const struct coop_rt_task_info *ti) {
  unsigned k = id & 0xffu;
  if (e->task[k].id != id || !e->task[k].live || ti->state < COOP_TASK_DONE) return;
  e->task[k].live = 0;
  if (ti->state == COOP_TASK_DONE && ti->t_gathered && ti->t_finished > ti->t_gathered)
    dp_ends_note(e, e->task[k].kernel, e->task[k].groups, ti->t_finished - ti->t_gathered);
}
