/*
 * coopctl_render.c: `coopctl render`, graphics-like periodic tasks (FSE
 * 2017 Sec. 5.2 and 5.4). The render kernel computes c = a x b for n x n
 * floats `reps` times; a probe with reps = 1 calibrates reps so that one
 * task lasts about E, then one periodic job (period P, deadline P, K
 * workgroups) runs for the requested time. Reported: gather time,
 * execution time and achieved period (successive releases), deadline
 * misses, and a CPU check of the last instance's c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coopctl.h"

#define RENDER_SEED 0x2545f491u
#define MAX_REPS 1000000u

struct rclass {
  const char *name;
  double period_ms, exec_ms;
};

static const struct rclass classes[] = {{"light", 70, 3}, {"medium", 40, 3}, {"heavy", 40, 10}};

struct render {
  const char *cls;
  double period_ms, exec_ms, seconds;
  uint32_t wg, n, reps, period_us, duration_ms;
  int device;                  /* --device, or COOP_ANY_DEVICE */
  int64_t probe_ns, probe2_ns; /* reps = 1, reps = probe2_reps */
  uint32_t probe2_reps;
  const char *calibration; /* "ok", "repeated" (the first was incoherent), "incoherent" */
  float *a, *b, *c;
};

/* ---- options ---- */

static int class_of(struct render *r, const char *name) {
  for (size_t i = 0; i < sizeof classes / sizeof *classes; i++)
    if (!strcmp(classes[i].name, name)) {
      r->cls = classes[i].name;
      r->period_ms = classes[i].period_ms;
      r->exec_ms = classes[i].exec_ms;
      return 0;
    }
  return ctl_usage("render", "--class must be light, medium or heavy");
}

static int positive(const char *name, const char *s, double *v) {
  if (s && (parse_double(s, v) || !(*v > 0) || *v > 4e6))
    return ctl_usage("render", "bad --%s %s (a positive number)", name, s);
  return 0;
}

static int render_opts(struct ctl *x, int argc, char **argv, struct render *r) {
  const char *cls = NULL, *wg = NULL, *period = NULL, *dur = NULL, *secs = NULL, *size = NULL,
             *device = NULL;
  const struct opt o[] = {{"class", &cls, NULL},     {"wg", &wg, NULL},
                          {"period", &period, NULL}, {"duration", &dur, NULL},
                          {"for", &secs, NULL},      {"size", &size, NULL},
                          {"device", &device, NULL}, {0}};
  char *pos[1];
  int npos, e = ctl_parse(x, "render", argc, argv, o, pos, &npos, 0);
  if (e) return e;
  if (!cls || !wg || !secs) return ctl_usage("render", "--class, --wg and --for are required");
  if ((e = class_of(r, cls))) return e;
  if (parse_u32(wg, &r->wg) || r->wg == 0) return ctl_usage("render", "bad --wg %s", wg);
  if ((e = parse_device("render", device, &r->device))) return e;
  r->n = 48;
  if (size && (parse_u32(size, &r->n) || r->n == 0 || r->n > 4096))
    return ctl_usage("render", "bad --size %s (1..4096)", size);
  if ((e = positive("period", period, &r->period_ms)) ||
      (e = positive("duration", dur, &r->exec_ms)) || (e = positive("for", secs, &r->seconds)))
    return e;
  r->period_us = (uint32_t)llround(r->period_ms * 1000);
  r->duration_ms = (uint32_t)llround(r->seconds * 1000);
  if (!r->period_us || !r->duration_ms)
    return ctl_usage("render", "--period must be at least 1 us and --for at least 1 ms");
  if ((uint64_t)r->duration_ms * 1000 / r->period_us + 1 > COOP_MAX_INSTANCES)
    return ctl_usage("render", "--for %s is more than %d periods", secs, COOP_MAX_INSTANCES);
  return 0;
}

/* ---- matrices ---- */

static float next_float(uint32_t *s) { /* xorshift32: small floats in [-1, 1) */
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

static int matrices(struct render *r) {
  size_t nn = (size_t)r->n * r->n;
  r->a = malloc(nn * sizeof *r->a);
  r->b = malloc(nn * sizeof *r->b);
  r->c = calloc(nn, sizeof *r->c);
  if (!r->a || !r->b || !r->c) return ctl_fail("render", COOP_ENOMEM);
  uint32_t s = RENDER_SEED;
  for (size_t i = 0; i < nn; i++) r->a[i] = next_float(&s);
  for (size_t i = 0; i < nn; i++) r->b[i] = next_float(&s);
  return 0;
}

/* Largest |c - a x b| (the CPU sums in the kernel's order). */
static double check(const struct render *r) {
  double worst = 0;
  uint32_t n = r->n;
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < n; j++) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < n; k++) acc += r->a[i * n + k] * r->b[k * n + j];
      double d = fabs((double)r->c[i * n + j] - acc);
      if (!(d <= worst)) worst = d; /* NaN counts as the worst */
    }
  return worst;
}

/* ---- jobs ---- */

static int run_job(struct ctl *x, struct render *r, uint32_t reps, int periodic,
                   struct coop_result *res) {
  size_t bytes = (size_t)r->n * r->n * sizeof(float);
  coop_job *j = coop_job_new("render", r->wg);
  if (!j) return ctl_fail("render", COOP_ENOMEM);
  coop_job_buf_in(j, r->a, bytes);
  coop_job_buf_in(j, r->b, bytes);
  coop_job_buf_out(j, r->c, bytes);
  coop_job_u32(j, r->n);
  coop_job_u32(j, reps);
  coop_job_device(j, r->device);
  if (periodic) coop_job_periodic(j, r->period_us, 0, r->duration_ms, r->period_us);
  uint64_t id;
  int e = coop_submit(x->c, j, &id);
  coop_job_free(j);
  if (e) return ctl_fail("render: submit", e);
  e = ctl_wait(x, id, -1, periodic, periodic ? r->seconds : 0, res);
  return e ? ctl_fail("render: wait", e) : 0;
}

static int64_t span(int64_t from, int64_t to) { return from && to && to >= from ? to - from : -1; }

/* One task with `reps`: its execution time in ns, or 0 with the error
 * printed. */
static int64_t probe(struct ctl *x, struct render *r, uint32_t reps) {
  struct coop_result res;
  if (run_job(x, r, reps, 0, &res)) return 0;
  int64_t ns = res.t.exec_ns >= 0 ? res.t.exec_ns : span(res.t.started, res.t.finished);
  if (res.state != COOP_STATE_DONE || ns <= 0) {
    fprintf(stderr, "coopctl: render: the calibration probe ended %s%s%s\n",
            coop_state_name(res.state), res.message[0] ? ": " : "", res.message);
    ns = 0;
  }
  coop_result_free(&res);
  return ns;
}

static uint32_t reps_for(double target_ns, double reps, int64_t ns) {
  double v = round(reps * target_ns / (double)ns);
  return v < 1 ? 1 : v > MAX_REPS ? MAX_REPS : (uint32_t)v;
}

/* Whether the two probes agree: a task has a fixed cost besides its
 * repetitions, so reps = R takes at most about R times as long as reps = 1.
 * Far more (a loaded host, a first run that compiled, a clock fit off)
 * means neither probe measured the kernel, and the reps rescaled from
 * them give tasks of any length: 20 reps once took 676 times one rep, and
 * a medium class (3 ms) ran 0.16 ms tasks. */
#define CALIBRATION_SLACK 3.0
static int coherent(const struct render *r) {
  return !r->probe2_reps ||
         (double)r->probe2_ns <= CALIBRATION_SLACK * r->probe2_reps * (double)r->probe_ns;
}

/* reps so that one task takes about E: a probe with reps = 1, then one
 * with the estimate, rescaled (the first run of a kernel can be slower, and
 * a task has a fixed cost besides its repetitions). Probes that disagree
 * (coherent) are run once more; if they still disagree, coopctl says so
 * and goes on, and the report says how long the tasks took. */
static int calibrate(struct ctl *x, struct render *r) {
  double target = r->exec_ms * 1e6;
  for (int attempt = 0;; attempt++) {
    r->probe2_reps = 0;
    r->probe2_ns = 0;
    if (!(r->probe_ns = probe(x, r, 1))) return 1;
    r->reps = reps_for(target, 1, r->probe_ns);
    if (r->reps == 1) break;
    if (!(r->probe2_ns = probe(x, r, r->reps))) return 1;
    r->probe2_reps = r->reps;
    r->reps = reps_for(target, r->reps, r->probe2_ns);
    if (coherent(r) || attempt == 1) break;
    fprintf(stderr,
            "coopctl: render: incoherent calibration: reps=1 took %.3f ms but reps=%u took "
            "%.3f ms (%.0f times as long, not at most %u): calibrating again\n",
            r->probe_ns / 1e6, r->probe2_reps, r->probe2_ns / 1e6,
            (double)r->probe2_ns / (double)r->probe_ns, r->probe2_reps);
    r->calibration = "repeated";
  }
  if (!coherent(r)) {
    r->calibration = "incoherent";
    fprintf(stderr,
            "coopctl: render: WARNING: the calibration is still incoherent: reps=1 took %.3f ms, "
            "reps=%u took %.3f ms; with reps %u the tasks may not last the %s class's %.3f ms "
            "(the report says how long they did)\n",
            r->probe_ns / 1e6, r->probe2_reps, r->probe2_ns / 1e6, r->reps, r->cls, r->exec_ms);
  } else if (!r->calibration) {
    r->calibration = "ok";
  }
  return 0;
}

/* ---- report ---- */

struct series {
  double *v;
  size_t n;
};

struct summary {
  struct series gather, exec, period;
  uint32_t done, misses;
};

static void add(struct series *s, int64_t ns) {
  if (ns >= 0) s->v[s->n++] = ns / 1e6;
}

static int summarise(const struct render *r, const struct coop_result *res, struct summary *m) {
  size_t n = res->ninst ? res->ninst : 1;
  memset(m, 0, sizeof *m);
  m->gather.v = malloc(n * sizeof(double));
  m->exec.v = malloc(n * sizeof(double));
  m->period.v = malloc(n * sizeof(double));
  if (!m->gather.v || !m->exec.v || !m->period.v) return ctl_fail("render", COOP_ENOMEM);
  int64_t deadline = (int64_t)r->period_us * 1000, prev = 0;
  for (uint32_t i = 0; i < res->ninst; i++) {
    const struct coop_times *t = &res->inst[i].t;
    add(&m->gather, t->gather_ns >= 0 ? t->gather_ns : span(t->released, t->gathered));
    add(&m->exec, t->exec_ns >= 0 ? t->exec_ns : span(t->started, t->finished));
    if (prev && t->released) add(&m->period, t->released - prev);
    if (t->released) prev = t->released;
    m->done += res->inst[i].state == COOP_STATE_DONE;
    m->misses += t->released && (!t->finished || t->finished > t->released + deadline);
  }
  sort_doubles(m->gather.v, m->gather.n);
  sort_doubles(m->exec.v, m->exec.n);
  sort_doubles(m->period.v, m->period.n);
  return 0;
}

static void summary_free(struct summary *m) {
  free(m->gather.v);
  free(m->exec.v);
  free(m->period.v);
}

static void row(const char *name, const struct series *s) {
  printf("%-10s", name);
  if (!s->n) {
    puts("  (no samples)");
    return;
  }
  double p[] = {50, 90, 99, 100};
  for (int i = 0; i < 4; i++) printf(" %10.4g", percentile(s->v, s->n, p[i]));
  printf("   (%zu)\n", s->n);
}

static void json_series(const char *name, const struct series *s) {
  printf(",\"%s\":", name);
  if (!s->n) {
    printf("null");
    return;
  }
  printf("{\"p50\":%.6f,\"p90\":%.6f,\"p99\":%.6f,\"max\":%.6f,\"samples\":%zu}",
         percentile(s->v, s->n, 50), percentile(s->v, s->n, 90), percentile(s->v, s->n, 99),
         percentile(s->v, s->n, 100), s->n);
}

static void report_json(const struct render *r, const struct coop_result *res,
                        const struct summary *m, int checked, double err, int ok) {
  printf(
      "{\"class\":\"%s\",\"period_ms\":%.3f,\"exec_target_ms\":%.3f,\"groups\":%u,\"n\":%u,"
      "\"seconds\":%.3f,",
      r->cls, r->period_ms, r->exec_ms, r->wg, r->n, r->seconds);
  if (r->probe_ns < 0)
    printf("\"probe_exec_ns\":null,\"reps\":%u,", r->reps); /* not measured */
  else
    printf("\"probe_exec_ns\":%lld,\"reps\":%u,", (long long)r->probe_ns, r->reps);
  printf("\"calibration\":\"%s\",", r->calibration ? r->calibration : "ok");
  json_result_fields(stdout, res);
  printf(",\"instances_done\":%u,\"deadline_misses\":%u", m->done, m->misses);
  if (m->exec.n)
    printf(",\"exec_obtained_ms\":%.6f", percentile(m->exec.v, m->exec.n, 50));
  else
    printf(",\"exec_obtained_ms\":null");
  json_series("gather_ms", &m->gather);
  json_series("exec_ms", &m->exec);
  json_series("period_ms_achieved", &m->period);
  printf(",\"check\":\"%s\"", !checked ? "skipped" : ok ? "ok" : "mismatch");
  if (checked) printf(",\"max_abs_error\":%g", err);
  puts("}");
}

static void report_text(const struct render *r, const struct coop_result *res,
                        const struct summary *m, int checked, double err, int ok) {
  printf(
      "render %s: period %.3f ms, execution target %.3f ms, %u workgroups on device %d, n %u, "
      "%.1f s\n",
      r->cls, r->period_ms, r->exec_ms, r->wg, res->device, r->n, r->seconds);
  printf("calibration: reps=1 took %.3f ms", r->probe_ns / 1e6);
  if (r->probe2_reps) printf(", reps=%u took %.3f ms", r->probe2_reps, r->probe2_ns / 1e6);
  printf(", so reps %u%s\n", r->reps,
         r->calibration && !strcmp(r->calibration, "incoherent") ? " (INCOHERENT: see the warnings)"
         : r->calibration && !strcmp(r->calibration, "repeated") ? " (calibrated twice)"
                                                                 : "");
  if (m->exec.n)
    printf("class     %s: execution target %.3f ms, obtained %.3f ms (p50)\n", r->cls, r->exec_ms,
           percentile(m->exec.v, m->exec.n, 50));
  printf("job %llu: %s%s%s\n", (unsigned long long)res->job, coop_state_name(res->state),
         res->message[0] ? ": " : "", res->message);
  printf("%-10s %10s %10s %10s %10s   (samples)\n", "ms", "p50", "p90", "p99", "max");
  row("gather", &m->gather);
  row("execution", &m->exec);
  row("period", &m->period);
  printf("instances %u (%u done), deadline misses %u (daemon: %u), reps %u\n", res->ninst, m->done,
         m->misses, res->misses, r->reps);
  if (!checked)
    printf("check: skipped (the job did not end done)\n");
  else if (ok)
    printf("check: c = a x b matches the CPU (max abs error %.3g)\n", err);
  else
    printf("check: MISMATCH: c differs from the CPU product by up to %.3g\n", err);
}

static int report(struct ctl *x, const struct render *r, const struct coop_result *res) {
  struct summary m;
  int e = summarise(r, res, &m);
  if (e) {
    summary_free(&m);
    return e;
  }
  int checked = res->state == COOP_STATE_DONE;
  double err = checked ? check(r) : 0, tol = 1e-5 + 1e-6 * r->n * r->n;
  int ok = checked && err <= tol;
  if (x->json)
    report_json(r, res, &m, checked, err, ok);
  else
    report_text(r, res, &m, checked, err, ok);
  if (checked && !ok)
    fprintf(stderr, "coopctl: render: the last instance's c does not match the CPU (%.3g > %.3g)\n",
            err, tol);
  /* the figures above are those of the tasks that ran, whatever the class */
  double got = m.exec.n ? percentile(m.exec.v, m.exec.n, 50) : -1;
  if (got >= 0 && (got < r->exec_ms / 2 || got > r->exec_ms * 2))
    fprintf(stderr,
            "coopctl: render: WARNING: the tasks lasted %.3f ms (execution p50), not the %s "
            "class's %.3f ms: %s; the gather and period figures are those of %.3f ms tasks\n",
            got, r->cls, r->exec_ms,
            r->reps == 1 && got > r->exec_ms
                ? "one repetition already takes longer here (a smaller --size shortens it)"
                : "the calibration was off",
            got);
  summary_free(&m);
  return ok ? 0 : 1;
}

int cmd_render(struct ctl *x, int argc, char **argv) {
  struct render r = {0};
  int e = render_opts(x, argc, argv, &r);
  if (e) return e == 1 ? 0 : e;
  if (!(e = matrices(&r)) && !(e = ctl_connect(x)) && !(e = calibrate(x, &r))) {
    struct coop_result res;
    if (!(e = run_job(x, &r, r.reps, 1, &res))) {
      e = report(x, &r, &res);
      coop_result_free(&res);
    }
  }
  free(r.a);
  free(r.b);
  free(r.c);
  return e;
}
