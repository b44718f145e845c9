/*
 * coopctl_app.c: `coopctl app`, the applications of docs/apps/ (bfs, l-sssp,
 * p-sssp, color, mis, bc, octree, game) run through coopd.
 *
 * The input comes from the apps' own readers and generators (a graph file
 * or stdin, a generator spec, or one of the test inputs); the application's
 * task description (app.h: prepare) becomes one libcoop job, its buffers
 * travelling inline or, past the daemon's inline limit, in memfds that coopd
 * reads the input from and writes the output back into; the application's
 * collect turns the buffers into its output, which goes to --out and, with
 * --check, is compared with the CPU reference. The same description is what
 * the in-process executor (coop_app_run_local, the tests) runs.
 *
 * Exit status: 0 done (and checked, with --check), 1 error, 2 bad usage,
 * 3 the output differs from the CPU reference.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "coopctl.h"

#define EXIT_MISMATCH 3

struct app_opts {
  const char *graph, *graph_format, *gen, *scale, *input, *source, *sources, *groups, *device, *out,
      *timeout;
  int list, query, original, check, binary;
};

struct app_run {
  const struct coop_app *a;
  struct coop_app_input in;
  struct coop_app_opts o;
  uint32_t groups;
  int device; /* COOP_ANY_DEVICE, or --device */
  int timeout_ms;
  uint32_t *sources; /* --sources: one job each, the input uploaded once */
  unsigned nsources;
};

#define APP_MAX_SOURCES 4096u

/* --sources V,V,...: the vertices into ar; 0, or the usage error's status. */
static int parse_sources(const char *s, struct app_run *ar) {
  ar->sources = calloc(APP_MAX_SOURCES, sizeof *ar->sources);
  if (!ar->sources) return 1;
  char buf[65536];
  if (strlen(s) >= sizeof buf) return ctl_usage("app", "--sources: the list is too long");
  if (!*s) return ctl_usage("app", "--sources: no vertex");
  snprintf(buf, sizeof buf, "%s", s);
  /* each element between commas (not strtok, which skipped the empty one
   * of "1,,2": it is refused) */
  for (char *t = buf, *comma; t; t = comma ? comma + 1 : NULL) {
    if ((comma = strchr(t, ','))) *comma = '\0';
    if (!*t) return ctl_usage("app", "--sources: an empty element in %s", s);
    if (ar->nsources == APP_MAX_SOURCES)
      return ctl_usage("app", "--sources: at most %u vertices", APP_MAX_SOURCES);
    if (parse_u32(t, &ar->sources[ar->nsources]))
      return ctl_usage("app", "bad --sources element %s (a vertex)", t);
    ar->nsources++;
  }
  return 0;
}

static const char *input_name(enum coop_input_kind k) {
  return k == COOP_INPUT_GRAPH ? "graph" : k == COOP_INPUT_POINTS ? "points" : "game";
}

static const char *elem_name(enum coop_app_elem e) {
  return e == COOP_APP_ELEM_I32 ? "i32" : e == COOP_APP_ELEM_F32 ? "f32" : "u32";
}

/* ---- --list ---- */

static void list_apps(const struct ctl *x, FILE *f) {
  if (x->json) {
    fprintf(f, "{\"apps\":[");
    for (unsigned i = 0; i < coop_napps; i++) {
      const struct coop_app *a = coop_apps[i];
      fprintf(f, "%s{\"name\":", i ? "," : "");
      json_str(f, a->name);
      fprintf(f, ",\"kernel\":");
      json_str(f, a->kernel);
      fprintf(f,
              ",\"input\":\"%s\",\"source\":%s,\"test_inputs\":%d,\"truth\":", input_name(a->input),
              a->has_source ? "true" : "false", coop_app_input_count(a, 0));
      json_str(f, a->truth);
      fprintf(f, ",\"output\":");
      json_str(f, a->output);
      fputc('}', f);
    }
    fprintf(f, "]}\n");
    return;
  }
  for (unsigned i = 0; i < coop_napps; i++) {
    const struct coop_app *a = coop_apps[i];
    fprintf(f, "%-7s kernel %s, input %s%s, %d test inputs\n", a->name, a->kernel,
            input_name(a->input), a->has_source ? " (--source)" : "", coop_app_input_count(a, 0));
    fprintf(f, "        truth:  %s\n        output: %s\n", a->truth, a->output);
  }
}

/* ---- the input ---- */

static int parse_format(const char *s, enum coop_graph_format *f) {
  for (int i = COOP_GRAPH_AUTO; i <= COOP_GRAPH_EDGES; i++)
    if (!strcmp(s, coop_graph_format_name((enum coop_graph_format)i))) {
      *f = (enum coop_graph_format)i;
      return 0;
    }
  return -1;
}

/* SPEC's fields after the generator's name: up to max u32 values split at
 * the characters of sep. The number of values, or -1. */
static int spec_fields(const char *s, const char *sep, uint32_t *v, int max) {
  char buf[128];
  int n = 0;
  if (strlen(s) >= sizeof buf) return -1;
  strcpy(buf, s);
  for (char *save = NULL, *t = strtok_r(buf, sep, &save); t; t = strtok_r(NULL, sep, &save)) {
    if (n == max || parse_u32(t, &v[n])) return -1;
    n++;
  }
  return n;
}

/* A generator's refusal of its sizes, with the bounds docs/inputs.md
 * gives: a zero size is bad usage, a size past a bound an error. */
static int gen_bounds(const char *spec, int e) {
  const char *b = !strncmp(spec, "rmat", 4)      ? "1 <= SCALE <= 30, EF >= 1, EF * 2^SCALE <= 2^30"
                  : !strncmp(spec, "road", 4)    ? "W, H >= 1, W * H <= 2^29"
                  : !strncmp(spec, "circuit", 7) ? "1 <= N <= 2^28"
                                                 : "1 <= N <= 2^28, M <= 2^29";
  if (e == COOP_EARGS) return ctl_usage("app", "bad --gen %s: a size out of range (%s)", spec, b);
  return ctl_error("app", e, "--gen %s: too large (%s)", spec, b);
}

/* --gen: rmat:SCALE[:EF[:SEED]], road:WxH[:SEED], circuit:N[:SEED],
 * random:N:M[:MAXW[:SEED]]. 0, EXIT_USAGE, or 1 (generator error). */
static int gen_graph(const char *spec, struct coop_app_input *in) {
  uint32_t v[4] = {0};
  const char *colon = strchr(spec, ':');
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  int road = len == 4 && !strncmp(spec, "road", 4), e = COOP_EARGS;
  int n = colon ? spec_fields(colon + 1, road ? ":x" : ":", v, 4) : 0;
  if (len == 4 && !strncmp(spec, "rmat", 4) && n >= 1 && n <= 3)
    e = coop_graph_rmat(&in->graph, v[0], n > 1 ? v[1] : 4, n > 2 ? v[2] : 42);
  else if (road && n >= 2 && n <= 3 && strcspn(colon + 1, ":") > strcspn(colon + 1, "x"))
    e = coop_graph_road(&in->graph, v[0], v[1], n > 2 ? v[2] : 7);
  else if (len == 7 && !strncmp(spec, "circuit", 7) && n >= 1 && n <= 2)
    e = coop_graph_circuit(&in->graph, v[0], n > 1 ? v[1] : 11);
  else if (len == 6 && !strncmp(spec, "random", 6) && n >= 2 && n <= 4)
    e = coop_graph_random(&in->graph, v[0], v[1], n > 2 ? v[2] : 255, n > 3 ? v[3] : 1);
  else
    return ctl_usage("app",
                     "bad --gen %s (rmat:SCALE[:EF[:SEED]], road:WxH[:SEED], circuit:N[:SEED], "
                     "random:N:M[:MAXW[:SEED]])",
                     spec);
  if (e == COOP_EARGS || e == COOP_ETOOBIG) return gen_bounds(spec, e);
  if (e) return ctl_error("app", e, "--gen %s: %s", spec, coop_strerror(e));
  snprintf(in->label, sizeof in->label, "%s", spec);
  return 0;
}

/* The input as the options say: 0, 1 (error, printed) or EXIT_USAGE. */
static int make_input(const struct app_opts *o, struct app_run *ar) {
  const struct coop_app *a = ar->a;
  struct coop_app_input *in = &ar->in;
  uint32_t scale = 0, idx = 0, src = 0;
  int e;
  if ((o->graph || o->gen) && a->input != COOP_INPUT_GRAPH)
    return ctl_usage("app", "%s reads %s, not a graph: choose a test input with --input/--scale",
                     a->name, input_name(a->input));
  if (o->graph && o->gen) return ctl_usage("app", "--graph and --gen exclude each other");
  if ((o->graph || o->gen) && (o->scale || o->input))
    return ctl_usage("app", "--scale and --input choose a test input: not with --graph or --gen");
  if (o->graph_format && !o->graph) return ctl_usage("app", "--graph-format needs --graph");
  if (o->source && !a->has_source) return ctl_usage("app", "%s takes no --source", a->name);
  if (o->sources && !a->has_source) return ctl_usage("app", "%s takes no --sources", a->name);
  if (o->sources && o->source) return ctl_usage("app", "--source and --sources exclude each other");
  if (o->sources && o->out) return ctl_usage("app", "--out takes one source, not --sources");
  if (o->sources && (e = parse_sources(o->sources, ar))) return e;
  if (o->scale && (parse_u32(o->scale, &scale) || scale > 12))
    return ctl_usage("app", "bad --scale %s (0..12)", o->scale);
  if (o->source && parse_u32(o->source, &src))
    return ctl_usage("app", "bad --source %s (a vertex)", o->source);
  memset(in, 0, sizeof *in);
  if (o->graph) {
    enum coop_graph_format fmt = COOP_GRAPH_AUTO;
    char err[256] = "";
    if (o->graph_format && parse_format(o->graph_format, &fmt))
      return ctl_usage("app", "bad --graph-format %s (auto, dimacs, mtx, edges)", o->graph_format);
    in->kind = COOP_INPUT_GRAPH;
    e = strcmp(o->graph, "-") ? coop_graph_read_file(o->graph, fmt, &in->graph, err, sizeof err)
                              : coop_graph_read_fd(STDIN_FILENO, fmt, &in->graph, err, sizeof err);
    if (e)
      return ctl_error("app", e, "%s: %s%s%s", strcmp(o->graph, "-") ? o->graph : "stdin",
                       coop_strerror(e), *err ? ": " : "", err);
    const char *base = strrchr(o->graph, '/');
    snprintf(in->label, sizeof in->label, "%s", base ? base + 1 : o->graph);
  } else if (o->gen) {
    in->kind = COOP_INPUT_GRAPH;
    if ((e = gen_graph(o->gen, in))) return e;
  } else {
    int count = coop_app_input_count(a, scale);
    if (o->input && (parse_u32(o->input, &idx) || (int)idx >= count))
      return ctl_usage("app", "bad --input %s: %s has test inputs 0..%d", o->input, a->name,
                       count - 1);
    if ((e = coop_app_input(a, idx, scale, in)))
      return ctl_error("app", e, "test input %u at scale %u: %s", idx, scale, coop_strerror(e));
  }
  if (a->input == COOP_INPUT_GRAPH) {
    if (in->graph.n == 0)
      return ctl_error("app", COOP_EFORMAT, "%s: the graph has no vertex", in->label);
    char why[256];
    if ((e = coop_app_fit_input(a, in, why, sizeof why))) /* both directions; no overflow */
      return ctl_error("app", e, "%s cannot run on %s: %s", a->name, in->label,
                       *why ? why : coop_strerror(e));
    if (o->source) {
      if (src >= in->graph.n) {
        fprintf(stderr, "coopctl: app: --source %u out of range: %s has %u vertices (0..%u)\n", src,
                in->label, in->graph.n, in->graph.n - 1);
        return EXIT_USAGE;
      }
      in->source = src;
    }
    for (unsigned k = 0; k < ar->nsources; k++)
      if (ar->sources[k] >= in->graph.n) {
        fprintf(stderr, "coopctl: app: --sources: vertex %u out of range: %s has %u vertices\n",
                ar->sources[k], in->label, in->graph.n);
        return EXIT_USAGE;
      }
  }
  return 0;
}

/* ---- the daemon executor ---- */

/* Host memory a job's IN buffers borrow until it is submitted (libcoop
 * copies IN data then): zeros for the scratch buffers, and full-size copies
 * of borrowed IN buffers whose data is shorter than the buffer. */
struct hold {
  void *p[COOP_MAX_ARGS + 1];
  unsigned n;
};

static void hold_free(struct hold *h) {
  for (unsigned i = 0; i < h->n; i++) free(h->p[i]);
  h->n = 0;
}

static void *hold_alloc(struct hold *h, size_t size) {
  void *p = calloc(1, size);
  if (p) h->p[h->n++] = p;
  return p;
}

/* The task as one libcoop job (cooperative, t->groups workgroups). Scratch
 * buffers go as IN buffers of zeros; an argument with a device buffer in
 * devbuf[i] (--sources: the input, uploaded once) names it instead. */
static int task_job(const struct app_run *ar, const struct coop_app_task *t, const uint64_t *devbuf,
                    coop_job **out, struct hold *h) {
  size_t zsize = 0;
  void *zeros = NULL;
  for (unsigned i = 0; i < t->nargs; i++)
    if (t->arg[i].buf && t->arg[i].dir == COOP_APP_SCRATCH && t->arg[i].size > zsize)
      zsize = t->arg[i].size;
  if (zsize && !(zeros = hold_alloc(h, zsize))) return COOP_ENOMEM;
  coop_job *j = coop_job_new(ar->a->kernel, t->groups);
  if (!j) return COOP_ENOMEM;
  coop_job_cooperative(j, 1);
  coop_job_query_barrier(j, ar->o.query_barrier);
  coop_job_device(j, ar->device);
  for (unsigned i = 0; i < t->nargs; i++) {
    const struct coop_app_arg *g = &t->arg[i];
    if (devbuf && devbuf[i]) {
      coop_job_buffer(j, devbuf[i]);
    } else if (!g->buf) {
      if (g->type == COOP_APP_U64)
        coop_job_u64(j, g->value);
      else
        coop_job_u32(j, (uint32_t)g->value);
    } else if (g->dir == COOP_APP_SCRATCH) {
      coop_job_buf_in(j, zeros, g->size);
    } else if (g->dir == COOP_APP_OUT) {
      coop_job_buf_out(j, g->host, g->size);
    } else if (g->dir == COOP_APP_INOUT) {
      coop_job_buf_inout(j, g->host, g->size);
    } else if (g->init_len == g->size) {
      coop_job_buf_in(j, g->init, g->size);
    } else {
      void *p = hold_alloc(h, g->size);
      if (!p) {
        coop_job_free(j);
        return COOP_ENOMEM;
      }
      if (g->init_len) memcpy(p, g->init, g->init_len);
      coop_job_buf_in(j, p, g->size);
    }
  }
  *out = j;
  return 0;
}

/* Runs the task through coopd: 0 with *res filled (any state), or an error
 * printed (returns 1). */
static int run_daemon(struct ctl *x, struct app_run *ar, struct coop_app_task *t,
                      const uint64_t *devbuf, struct coop_result *res) {
  coop_job *j = NULL;
  struct hold h = {0};
  char what[96];
  snprintf(what, sizeof what, "app %s", ar->a->name);
  int e = task_job(ar, t, devbuf, &j, &h);
  if (e) {
    hold_free(&h);
    return ctl_fail(what, e);
  }
  uint64_t id;
  e = coop_submit(x->c, j, &id);
  coop_job_free(j);
  hold_free(&h);
  if (e) {
    ctl_fail(what, e);
    if (e == COOP_ENOKERNEL)
      fprintf(stderr,
              "coopctl: coopd has no kernel %s: its kernel directories lack the applications' "
              "(installed in share/coop/kernels; in a build tree kernels/apps)\n",
              ar->a->kernel);
    return 1;
  }
  e = ctl_wait(x, id, ar->timeout_ms, 0, 0, res);
  if (!e) return 0;
  if (e != COOP_ETIMEDOUT) return ctl_fail(what, e);
  char said[COOP_TEXT_MAX];
  snprintf(said, sizeof said, "%s", coop_errmsg(NULL));
  const char *why = ctl_not_done(x, id, said);
  coop_cancel(x->c, id);
  return ctl_error(what, e, "timed out after %d ms: job %llu cancelled%s", ar->timeout_ms,
                   (unsigned long long)id, why);
}

/* ---- output ---- */

struct app_out {
  const struct app_run *ar;
  int binary;
  const void *out;
  size_t bytes;
};

/* Binary as collect laid it out, or text, one element per line. */
static int fill_output(FILE *f, void *arg) {
  const struct app_out *o = arg;
  if (o->binary) return fwrite(o->out, 1, o->bytes, f) == o->bytes ? 0 : -1;
  const uint32_t *u = o->out;
  const float *fl = o->out;
  for (size_t i = 0; i < o->bytes / 4; i++) {
    if (o->ar->a->elem == COOP_APP_ELEM_F32)
      fprintf(f, "%.9g\n", (double)fl[i]);
    else if (o->ar->a->elem == COOP_APP_ELEM_I32)
      fprintf(f, "%d\n", (int32_t)u[i]);
    else
      fprintf(f, "%u\n", u[i]);
  }
  return 0;
}

/* The output to path ("-": stdout; a file as ctl_save writes it). 0, or 1
 * with the error printed. */
static int write_output(const struct app_run *ar, const char *path, int binary, const void *out,
                        size_t bytes) {
  struct app_out o = {ar, binary, out, bytes};
  if (strcmp(path, "-") ? ctl_save(path, fill_output, &o) == 0
                        : fill_output(stdout, &o) == 0 && fflush(stdout) == 0)
    return 0;
  return ctl_error("app", COOP_EIO, "%s: write error: %s", path, strerror(errno));
}

static void describe_input(FILE *f, const struct app_run *ar) {
  const struct coop_app_input *in = &ar->in;
  if (in->kind == COOP_INPUT_GRAPH) {
    fprintf(f, "%u vertices, %u edges", in->graph.n, in->graph.m);
    if (ar->a->has_source) fprintf(f, ", source %u", in->source);
  } else {
    fprintf(f, "%u %s", in->count, in->kind == COOP_INPUT_POINTS ? "points" : "positions");
  }
}

/* check: "ok", "MISMATCH", "error", or NULL (not asked for) */
static void report(const struct ctl *x, const struct app_run *ar, const struct coop_result *res,
                   const char *check, const char *why, const char *out, size_t bytes) {
  const struct coop_app *a = ar->a;
  FILE *f = out && !strcmp(out, "-") ? stderr : stdout;
  if (x->json) {
    fprintf(f, "{\"app\":");
    json_str(f, a->name);
    fprintf(f, ",\"kernel\":");
    json_str(f, a->kernel);
    fprintf(f, ",\"input\":");
    json_str(f, ar->in.label);
    if (ar->in.kind == COOP_INPUT_GRAPH) {
      fprintf(f, ",\"vertices\":%u,\"edges\":%u", ar->in.graph.n, ar->in.graph.m);
      if (a->has_source) fprintf(f, ",\"source\":%u", ar->in.source);
    } else {
      fprintf(f, ",\"count\":%u", ar->in.count);
    }
    fprintf(f, ",\"groups\":%u,\"mode\":\"%s\",\"query_barrier\":%s,", ar->groups,
            ar->o.mode == COOP_APP_MODE_ORIGINAL ? "original" : "cooperative",
            ar->o.query_barrier ? "true" : "false");
    json_result_fields(f, res);
    if (res->state == COOP_STATE_DONE) {
      fprintf(f, ",\"output\":{\"type\":\"%s\",\"elements\":%zu,\"bytes\":%zu,\"file\":",
              elem_name(a->elem), bytes / 4, bytes);
      if (out)
        json_str(f, out);
      else
        fprintf(f, "null");
      fputc('}', f);
    } else {
      fprintf(f, ",\"output\":null");
    }
    fprintf(f, ",\"check\":");
    if (check) {
      json_str(f, check);
      fprintf(f, ",\"why\":");
      json_str(f, why);
    } else {
      fprintf(f, "null");
    }
    fprintf(f, "}\n");
    return;
  }
  fprintf(f, "%s on %s (", a->name, ar->in.label);
  describe_input(f, ar);
  fprintf(f, "): %s form%s, %u workgroups on device %d\n",
          ar->o.mode == COOP_APP_MODE_ORIGINAL ? "original" : "cooperative",
          ar->o.query_barrier ? ", query barrier" : "", ar->groups, res->device);
  if (f == stdout) {
    print_result(x, res);
  } else { /* print_result writes to stdout, which holds the output */
    fprintf(f,
            "job %llu: %s, execution %.3f ms; M initial %u, min %u, max %u; kills %u, "
            "forks %u, resizes %u\n",
            (unsigned long long)res->job, coop_state_name(res->state), res->t.exec_ns / 1e6,
            res->m_initial, res->m_min, res->m_max, res->kills, res->forks, res->resizes);
  }
  if (res->state != COOP_STATE_DONE) return;
  fprintf(f, "output: %zu x %s", bytes / 4, elem_name(a->elem));
  if (out) fprintf(f, " to %s", strcmp(out, "-") ? out : "stdout");
  fprintf(f, "\ncheck: %s%s%s\n", check ? check : "not asked for (--check)",
          why && *why ? ": " : "", why ? why : "");
}

/* ---- the command ---- */

static int app_setup(const struct app_opts *o, struct app_run *ar) {
  uint32_t t = 0, g = 0;
  int e = parse_device("app", o->device, &ar->device);
  if (e) return e;
  if (o->timeout && (parse_u32(o->timeout, &t) || t > INT32_MAX))
    return ctl_usage("app", "bad --timeout %s (ms)", o->timeout);
  if (o->groups && (parse_u32(o->groups, &g) || g == 0))
    return ctl_usage("app", "bad --groups %s (1..workers)", o->groups);
  if (o->binary && !o->out) return ctl_usage("app", "--binary needs --out");
  if (o->out && strcmp(o->out, "-") && ctl_writable("app", o->out)) return 1;
  if (o->original && o->query)
    return ctl_usage("app", "--query-barrier is the cooperative form's: not with --original");
  ar->timeout_ms = o->timeout ? (int)t : -1;
  ar->o.groups = g;
  ar->o.mode = o->original ? COOP_APP_MODE_ORIGINAL : COOP_APP_MODE_COOPERATIVE;
  ar->o.query_barrier = o->query;
  ar->o.timeout_ms = ar->timeout_ms;
  return 0;
}

/* ---- --sources: the input once, one job per source ---- */

static double ms_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The input's buffers: a task's borrowed IN buffers (the graph's arrays,
 * the same for every source), each a device buffer created at its first
 * sight. */
struct uploads {
  struct {
    const void *init;
    size_t size;
    uint64_t id;
  } u[COOP_MAX_ARGS];
  unsigned n;
  size_t bytes;
  double ms;
};

/* A device buffer of the input: made at once, or, while the device's
 * arena has no room for it now (EBUSY: running jobs' copies hold it),
 * asked again every 100 ms, said once, until it is made or the run's
 * --timeout passes. 0, or a coop code (ctl_fail said it). */
static int upload_one(struct ctl *x, const struct app_run *ar, const struct coop_app_arg *g,
                      uint64_t *id) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int e, told = 0;
  while ((e = coop_buffer_create(x->c, ar->device, g->size, g->init, 0, id)) == COOP_EBUSY) {
    if (ar->timeout_ms >= 0 && ms_since(&t0) >= ar->timeout_ms) {
      e = COOP_ETIMEDOUT;
      break;
    }
    if (!told++)
      fprintf(stderr, "coopctl: app: waiting for room to upload the input (%zu bytes): %s\n",
              g->size, coop_errmsg(NULL));
    struct timespec nap = {0, 100 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  return e ? ctl_fail("app: uploading the input", e) : 0;
}

static int upload(struct ctl *x, const struct app_run *ar, const struct coop_app_task *t,
                  struct uploads *up, uint64_t *devbuf) {
  for (unsigned i = 0; i < t->nargs; i++) {
    const struct coop_app_arg *g = &t->arg[i];
    devbuf[i] = 0;
    if (!g->buf || g->dir != COOP_APP_IN || g->host || !g->init || g->init_len != g->size) continue;
    unsigned k = 0;
    while (k < up->n && (up->u[k].init != g->init || up->u[k].size != g->size)) k++;
    if (k == up->n) {
      struct timespec t0;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      uint64_t id;
      if (upload_one(x, ar, g, &id)) return 1;
      up->ms += ms_since(&t0);
      up->bytes += g->size;
      up->u[up->n].init = g->init;
      up->u[up->n].size = g->size;
      up->u[up->n++].id = id;
    }
    devbuf[i] = up->u[k].id;
  }
  return 0;
}

/* One job per source over the input uploaded once; a line each, then the
 * total. Exit status as for one run (the first failure's). */
static int run_sources(struct ctl *x, const struct app_opts *o, struct app_run *ar) {
  const struct coop_app *a = ar->a;
  struct uploads up = {0};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int r = 0;
  unsigned done = 0;
  for (unsigned k = 0; k < ar->nsources && !r; k++) {
    ar->in.source = ar->sources[k];
    struct coop_app_task t;
    uint64_t devbuf[COOP_MAX_ARGS];
    int e = coop_app_task_prepare(&t, a, &ar->in, &ar->o, ar->groups);
    if (e) {
      fprintf(stderr, "coopctl: app %s: source %u: %s\n", a->name, ar->sources[k],
              coop_strerror(e));
      return 1;
    }
    struct coop_result res;
    if ((r = upload(x, ar, &t, &up, devbuf)) || (r = run_daemon(x, ar, &t, devbuf, &res))) {
      coop_app_task_free(&t);
      break;
    }
    void *out = NULL;
    size_t bytes = 0;
    const char *check = "not asked for";
    char why[512] = "";
    if (res.state != COOP_STATE_DONE) {
      fprintf(stderr, "coopctl: app %s: source %u: job %llu ended %s%s%s\n", a->name,
              ar->sources[k], (unsigned long long)res.job, coop_state_name(res.state),
              res.message[0] ? ": " : "", res.message);
      r = 1;
    } else if (o->check && (e = coop_app_task_collect(&t, &ar->in, &out, &bytes)) == 0) {
      e = a->check(&ar->in, out, why, sizeof why);
      check = e == 0 ? "ok" : e == COOP_EMISMATCH ? "MISMATCH" : "error";
      r = e == 0 ? 0 : e == COOP_EMISMATCH ? EXIT_MISMATCH : 1;
    } else if (o->check) {
      check = "error";
      r = 1;
    }
    if (res.state == COOP_STATE_DONE) {
      done++;
      printf("source %u: job %llu done, execution %.3f ms, check %s%s%s\n", ar->sources[k],
             (unsigned long long)res.job, res.t.exec_ns / 1e6, check, *why ? ": " : "", why);
    }
    free(out);
    coop_result_free(&res);
    coop_app_task_free(&t);
  }
  double total = ms_since(&t0);
  for (unsigned k = 0; k < up.n; k++) coop_buffer_free(x->c, up.u[k].id);
  printf(
      "%s on %s: %u of %u sources done in %.3f ms; the input's %zu bytes (%u buffers) "
      "uploaded once, in %.3f ms\n",
      a->name, ar->in.label, done, ar->nsources, total, up.bytes, up.n, up.ms);
  return r;
}

/* After the input is there: connect, run, collect, write, check. */
static int app_go(struct ctl *x, const struct app_opts *o, struct app_run *ar) {
  const struct coop_app *a = ar->a;
  char what[96], why[512] = "";
  snprintf(what, sizeof what, "app %s", a->name);
  int r = ctl_connect(x);
  if (r) return r;
  /* N: --groups, else every worker of the device (of device 0 when the
   * daemon picks: the least loaded one with that many) */
  const struct coop_info *info = coop_info(x->c);
  ar->groups = ar->o.groups ? ar->o.groups : info->workers;
  if (ar->device != COOP_ANY_DEVICE) {
    if ((uint32_t)ar->device >= info->ndevices) {
      fprintf(stderr, "coopctl: %s: --device %d: coopd has %u device%s (0..%u)\n", what, ar->device,
              info->ndevices, info->ndevices == 1 ? "" : "s", info->ndevices - 1);
      return EXIT_USAGE;
    }
    struct coop_stats st;
    int e = ar->o.groups ? 0 : coop_stats(x->c, &st);
    if (e) return ctl_fail(what, e);
    if (!ar->o.groups) ar->groups = st.devs[ar->device].workers;
  }
  if (ar->nsources) return run_sources(x, o, ar);
  struct coop_app_task t;
  int e = coop_app_task_prepare(&t, a, &ar->in, &ar->o, ar->groups);
  if (e)
    return ctl_error(what, e, "%s cannot run on %s: %s", a->name, ar->in.label, coop_strerror(e));
  struct coop_result res;
  if ((r = run_daemon(x, ar, &t, NULL, &res))) {
    coop_app_task_free(&t);
    return r;
  }
  void *out = NULL;
  size_t bytes = 0;
  if (res.state != COOP_STATE_DONE) {
    report(x, ar, &res, NULL, NULL, NULL, 0);
    int gen = res.error && !ctl_message_says_it(res.error, res.message);
    fprintf(stderr, "coopctl: %s: job %llu ended %s%s%s%s%s\n", what, (unsigned long long)res.job,
            coop_state_name(res.state), res.error ? ": " : "", gen ? coop_strerror(res.error) : "",
            gen && res.message[0] ? ": " : "", res.message);
    r = 1;
  } else if ((e = coop_app_task_collect(&t, &ar->in, &out, &bytes))) {
    r = ctl_error(what, e, "the output of job %llu: %s", (unsigned long long)res.job,
                  coop_strerror(e));
  } else {
    const char *check = NULL;
    if (o->check) {
      e = a->check(&ar->in, out, why, sizeof why);
      check = e == 0 ? "ok" : e == COOP_EMISMATCH ? "MISMATCH" : "error";
      if (e && !*why) snprintf(why, sizeof why, "%s", coop_strerror(e));
      r = e == 0 ? 0 : e == COOP_EMISMATCH ? EXIT_MISMATCH : 1;
    }
    if (o->out && write_output(ar, o->out, o->binary, out, bytes)) r = r ? r : 1;
    report(x, ar, &res, check, why, o->out, bytes);
    if (r == EXIT_MISMATCH)
      fprintf(stderr, "coopctl: %s on %s: the output differs from the CPU reference: %s\n", a->name,
              ar->in.label, why);
    else if (check && r)
      fprintf(stderr, "coopctl: %s: the check failed: %s\n", what, why);
  }
  free(out);
  coop_result_free(&res);
  coop_app_task_free(&t);
  return r;
}

int cmd_app(struct ctl *x, int argc, char **argv) {
  struct app_opts o = {0};
  const struct opt opts[] = {{"list", NULL, &o.list},
                             {"graph", &o.graph, NULL},
                             {"graph-format", &o.graph_format, NULL},
                             {"gen", &o.gen, NULL},
                             {"scale", &o.scale, NULL},
                             {"input", &o.input, NULL},
                             {"source", &o.source, NULL},
                             {"sources", &o.sources, NULL},
                             {"groups", &o.groups, NULL},
                             {"device", &o.device, NULL},
                             {"query-barrier", NULL, &o.query},
                             {"original", NULL, &o.original},
                             {"out", &o.out, NULL},
                             {"binary", NULL, &o.binary},
                             {"check", NULL, &o.check},
                             {"timeout", &o.timeout, NULL},
                             {0}};
  char *pos[1];
  int npos, r = ctl_parse(x, "app", argc, argv, opts, pos, &npos, 1);
  if (r == 1) { /* --help: and the applications with their sources of truth */
    struct ctl plain = {0};
    printf("\napplications (coopctl app --list):\n");
    list_apps(&plain, stdout);
    return 0;
  }
  if (r) return r;
  if (o.list) {
    if (npos) return ctl_usage("app", "--list takes no NAME");
    list_apps(x, stdout);
    return 0;
  }
  if (!npos) return ctl_usage("app", "NAME is missing (coopctl app --list names them)");
  struct app_run ar;
  memset(&ar, 0, sizeof ar);
  if (!(ar.a = coop_app_find(pos[0]))) {
    fprintf(stderr, "coopctl: app: unknown application %s; there are:", pos[0]);
    for (unsigned i = 0; i < coop_napps; i++) fprintf(stderr, " %s", coop_apps[i]->name);
    fputc('\n', stderr);
    return EXIT_USAGE;
  }
  if ((r = app_setup(&o, &ar)) || (r = make_input(&o, &ar))) {
    coop_app_input_free(&ar.in);
    free(ar.sources);
    return r;
  }
  r = app_go(x, &o, &ar);
  coop_app_input_free(&ar.in);
  free(ar.sources);
  return r;
}
