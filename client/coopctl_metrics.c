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
#include <unistd.h>

#include "coop_prom.h"
#include "coopctl.h"

/* --out FILE: written beside it and renamed, so a collector never reads
 * half a file. */
static int write_out(const char *path, const struct coop_stats *s, const struct coop_metrics *m) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
    return ctl_usage("metrics", "--out %s: path too long", path);
  FILE *f = fopen(tmp, "w");
  if (!f) goto fail;
  coop__prom_write(f, s, m);
  if (fclose(f)) goto fail;
  if (rename(tmp, path)) goto fail;
  return 0;
fail:
  fprintf(stderr, "coopctl: metrics: %s: %s\n", f ? path : tmp, strerror(errno));
  unlink(tmp);
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
