/*
 * coopctl_metrics.c: `coopctl metrics`, the daemon's STATS in the Prometheus
 * text exposition format (version 0.0.4), for node_exporter's textfile
 * collector or any scraper that runs a command. Names follow Prometheus'
 * conventions: base units (seconds, bytes), _total for counters, one
 * histogram per device for gather times. Metrics the daemon does not send
 * (an older coopd) are left out, not written as zeros.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coop_prom.h"
#include "coopctl.h"

struct prom_out {
  const struct coop_stats *s;
  const struct coop_metrics *m;
};

static int fill_prom(FILE *f, void *arg) {
  const struct prom_out *p = arg;
  coop__prom_write(f, p->s, p->m);
  return 0;
}

/* --out FILE: a regular file is written beside it and renamed, so that a
 * collector never reads half a file; a FIFO or a device is written in
 * place, never replaced (ctl_save). */
static int write_out(const char *path, const struct coop_stats *s, const struct coop_metrics *m) {
  struct prom_out p = {s, m};
  if (ctl_save(path, fill_prom, &p) == 0) return 0;
  fprintf(stderr, "coopctl: metrics: %s: %s\n", path, strerror(errno));
  return 1;
}

int cmd_metrics(struct ctl *x, int argc, char **argv) {
  const char *out = NULL;
  const struct opt o[] = {{"out", &out, NULL}, {0}};
  char *pos[1];
  int npos, r = ctl_parse(x, "metrics", argc, argv, o, pos, &npos, 0);
  if (r) return r == 1 ? 0 : r;
  if (x->json) return ctl_usage("metrics", "metrics prints Prometheus text; stats --json is JSON");
  if ((r = ctl_connect(x))) return r;
  struct coop_stats s;
  struct coop_metrics m;
  int e = coop_metrics(x->c, &s, &m);
  if (e) return ctl_fail("metrics", e);
  if (out) return write_out(out, &s, &m);
  coop__prom_write(stdout, &s, &m);
  return fflush(stdout) ? 1 : 0;
}
