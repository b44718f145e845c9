/*
 * fuzz_config.c: fuzz target for coopd's config reader (daemon/config.h).
 *
 * The input is the text of an ini file. It is read over the defaults with
 * config_load_string (inih's ini_parse_string, then our key table), then
 * checked with config_validate and printed with config_print. The reader
 * must return 0 or -1; on -1 the message names the input and a line
 * ("fuzz:LINE: ..."), on 0 every field is within what the key table allows
 * (strings terminated inside their arrays, numbers at most their maxima).
 * Reading the same text again over fresh defaults must give the same bytes
 * (no result may depend on memory the reader did not write).
 *
 * Built with -DCOOP_FUZZ_STANDALONE it has a main() that replays built-in
 * seeds, the files and directories named on its command line (ctest names
 * conf/coopd.ini and the regression corpus tests/data/config_corpus, where
 * scripts/fuzz puts libFuzzer's crash inputs), and deterministic mutations
 * of all of them; or writes the built-in seeds for libFuzzer
 * (--write-corpus DIR). A named file is also read with config_load, which
 * must agree with config_load_string (what is fuzzed is what coopd reads).
 *
 * Built with -DCOOP_FUZZ_RT_STUB (the clang libFuzzer build, which does not
 * link the gcc-built runtime), it answers config_validate's question about
 * built-in backends itself, as a coopd built with OpenCL only.
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "coop_rt.h"
#include "wire.h"
#include "fuzz_mutate.h"
#include "xorshift.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef COOP_FUZZ_RT_STUB
int coop_rt_backend_built(const char *name) {
  return name && (!strcmp(name, "auto") || !strcmp(name, "opencl"));
}
const char *coop_rt_backends_built(void) { return "opencl"; }
#endif

static void fail(const char *what, const char *text, const char *err) {
  fprintf(stderr, "fuzz_config: %s (message \"%s\"; input:\n%s\n)\n", what, err, text);
  abort();
}

static unsigned long nread, nrefused, nvalid;

/* The string field f holds a terminated string. */
#define TERMINATED(c, f) (memchr((c)->f, '\0', sizeof(c)->f) != NULL)

/* What any successful read leaves: the defaults, or values the key table
 * accepted (its maxima, daemon/config.c). */
static void check_fields(const struct config *c, const char *text) {
  if (!TERMINATED(c, backend) || !TERMINATED(c, devices) || !TERMINATED(c, platform) ||
      !TERMINATED(c, device) || !TERMINATED(c, socket) || !TERMINATED(c, journal) ||
      !TERMINATED(c, kernel_dirs) || !TERMINATED(c, metrics_listen))
    fail("a string field is not terminated", text, "");
  if (c->platform_index < -1 || c->platform_index > 64 || c->device_index < -1 ||
      c->device_index > 64)
    fail("an index out of range", text, "");
  if (c->local_size > 1024 || c->max_workgroups > 1088 || c->arena_mb > (1u << 16) ||
      c->socket_mode > 0777 || c->max_clients > 100000 || c->max_jobs_per_client > (1u << 20) ||
      c->max_bytes_per_client > (1ull << 40) || c->max_finished_per_client > (1u << 20) ||
      c->watchdog_ms > (1u << 31) || c->grace_ms > (1u << 31) || c->gather_budget_ms > (1u << 31) ||
      c->hang_ms > (1u << 31) || c->task_max_ms > (1u << 31) || c->restart_hold_ms > 3600000u ||
      c->reserve_percent > 100 || c->metrics_max_connections > 1024 ||
      c->metrics_timeout_ms > 600000 || c->metrics_max_per_peer > 1024 ||
      c->metrics_request_ms > 600000 || c->min_deadline_us > 1000000 ||
      (c->metrics_allow_remote & ~1))
    fail("a number over its maximum", text, "");
  if (c->log_level < 0 || c->log_level > 3 || (c->log_syslog != 0 && c->log_syslog != 1))
    fail("log level or syslog flag out of range", text, "");
}

/* What config_validate's success promises coopd (daemon/main.c opens the
 * devices, the journal and the socket from these without further checks). */
static void check_valid(const struct config *c, const char *text) {
  int idx[COOP_WIRE_MAX_DEVICES];
  int n = config_devices(c, idx, COOP_WIRE_MAX_DEVICES);
  if (n < 0 || n > (int)COOP_WIRE_MAX_DEVICES) fail("valid, but [device] devices is not", text, "");
  /* a list names 0..63; without one, the one device is device_index */
  for (int i = 0; i < n; i++)
    if (c->devices[0] ? idx[i] < 0 || idx[i] > 63 : n != 1 || idx[0] != c->device_index)
      fail("valid, but a device index is out of range", text, "");
  if (c->socket[0] != '/') fail("valid, but the socket path is not absolute", text, "");
  if (c->journal[0] && c->journal[0] != '/' && strcmp(c->journal, "off"))
    fail("valid, but the journal is neither absolute nor off", text, "");
  if (!c->kernel_dirs[0] || (c->local_size & (c->local_size - 1)) || !c->max_jobs_per_client ||
      !c->max_clients || !c->arena_mb)
    fail("valid, but a cross-field rule is broken", text, "");
  /* metrics_http.c binds what this gives without further checks */
  struct sockaddr_storage ss;
  char err[1024];
  int m = config_metrics_addr(c, &ss, err, sizeof err);
  if (m < 0 || (m == 0 && ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
      (m == 1 && c->metrics_listen[0]) || !c->metrics_max_connections || !c->metrics_timeout_ms ||
      !c->metrics_max_per_peer || !c->metrics_request_ms)
    fail("valid, but [metrics] is not", text, err);
}

/* A refusal names what it refuses: "[section] key: ..." or the limits. */
static int names_a_key(const char *err) {
  return !strncmp(err, "[device] ", 9) || !strncmp(err, "[server] ", 9) ||
         !strncmp(err, "[kernels] ", 10) || !strncmp(err, "[metrics] ", 10) ||
         !strncmp(err, "[limits] ", 9) || !strncmp(err, "[jobs] ", 7) ||
         !strncmp(err, "[log] ", 6) || strstr(err, "max_jobs_per_client") != NULL;
}

/* config_print's lines, kept (the standalone expectations look into them). */
static size_t nprinted;
static char printed[8192];
static void print_line(const char *line) {
  size_t n = strlen(line);
  if (nprinted + n + 2 <= sizeof printed) {
    memcpy(printed + nprinted, line, n);
    printed[nprinted + n] = '\n';
    printed[nprinted + n + 1] = '\0';
  }
  nprinted += n + 1;
}

/* Reads text (terminated) and checks the result; 0 if it was accepted. */
static int read_text(const char *text, struct config *c) {
  char err[1024];
  memset(err, 0x55, sizeof err); /* unterminated unless the reader writes it */
  config_defaults(c);
  int r = config_load_string(c, "fuzz", text, err, sizeof err);
  if (r == 0) {
    check_fields(c, text);
    return 0;
  }
  if (r != -1) fail("config_load_string returned neither 0 nor -1", text, "");
  if (!memchr(err, '\0', sizeof err)) fail("message not terminated", text, "");
  char *end;
  if (strncmp(err, "fuzz:", 5) || strtol(err + 5, &end, 10) <= 0 || strncmp(end, ": ", 2) ||
      !end[2])
    fail("message does not name a line and say what", text, err);
  return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* inih reads a NUL-terminated string: a copy of exactly size + 1 bytes,
   * so that AddressSanitizer sees any read past the end */
  char *text = malloc(size + 1);
  if (!text) abort();
  memcpy(text, data, size);
  text[size] = '\0';
  static struct config a, b;
  nread++;
  int r = read_text(text, &a);
  if (read_text(text, &b) != r || (r == 0 && memcmp(&a, &b, sizeof a)))
    fail("two reads of the same text differ", text, "");
  if (r == 0) {
    char err[1024];
    memset(err, 0x55, sizeof err);
    if (config_validate(&a, err, sizeof err) == 0) {
      nvalid++;
      check_valid(&a, text);
    } else if (!memchr(err, '\0', sizeof err) || !err[0]) {
      fail("config_validate refused without a message", text, "");
    } else if (!names_a_key(err)) {
      fail("config_validate's message names no key", text, err);
    }
    nprinted = 0;
    printed[0] = '\0';
    config_print(&a, print_line);
  } else {
    nrefused++;
  }
  free(text);
  return 0;
}

#ifdef COOP_FUZZ_STANDALONE
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

/* ---- seeds: every key, its edges, and inih's syntax ---- */

static const char *const builtin[] = {
    /* every key at a valid value */
    "[device]\nbackend = opencl\nplatform = Portable\ndevice = cpu\nplatform_index = 0\n"
    "device_index = -1\nlocal_size = 64\nmax_workgroups = 0\narena_mb = 256\n"
    "[server]\nsocket = /tmp/coop.sock\nsocket_mode = 0660\nmax_clients = 64\n"
    "[kernels]\ndirs = /a:/b\n"
    "[limits]\nmax_jobs_per_client = 64\nmax_bytes_per_client = 256M\n"
    "max_finished_per_client = 256\n"
    "[log]\nlevel = debug\nsyslog = no\n"
    "[jobs]\nwatchdog_ms = 0\ngrace_ms = 5000\ngather_budget_ms = 10000\nhang_ms = 5000\n",
    /* the keys added since: several devices, the journal, the watchdog's */
    "[device]\ndevices = 0,1\n[server]\nsocket = /tmp/coop.sock\njournal = /tmp/coop.jobs\n"
    "[jobs]\nwatchdog_ms = 60000\ngather_budget_ms = 0\nhang_ms = 0\n",
    "[device]\ndevices = all\n[server]\njournal = off\n",
    "[jobs]\nreserve_percent = 0\n",
    "[jobs]\nreserve_percent = 100\n",
    "[jobs]\nreserve_percent = 101\n",
    "[device]\ndevices = 0,0,0,0,0,0,0,63\n",
    /* [metrics]: the address forms, allowed or refused */
    "[metrics]\nlisten = 127.0.0.1:9464\nmax_connections = 1024\ntimeout_ms = 600000\n",
    "[metrics]\nlisten = [::1]:0\n",
    "[metrics]\nlisten = localhost:65535\n",
    "[metrics]\nlisten = 0.0.0.0:9464\nallow_remote = yes\n",
    "[metrics]\nlisten = [::]:9464\n",
    "[metrics]\nlisten = [::1:9464\n",
    "[metrics]\nlisten = ::1:9464\n",
    "[metrics]\nlisten = 127.0.0.1:-1\n",
    "[metrics]\nlisten = :9464\n",
    "[metrics]\nlisten = []:1\n",
    "[metrics]\nmax_connections = 0\n",
    "[metrics]\ntimeout_ms = 600001\n",
    "[metrics]\nmax_connections_per_peer = 1024\nrequest_timeout_ms = 600000\n",
    "[metrics]\nmax_connections_per_peer = 0\n",
    "[metrics]\nrequest_timeout_ms = 600001\n",
    "[jobs]\nmin_deadline_us = 0\n",
    "[jobs]\nmin_deadline_us = 1000001\n",
    /* the maxima */
    "[device]\nplatform_index = 64\ndevice_index = 64\nlocal_size = 1024\n"
    "max_workgroups = 1088\narena_mb = 65536\n[server]\nsocket_mode = 0777\n"
    "max_clients = 100000\n[limits]\nmax_jobs_per_client = 1048576\n"
    "max_bytes_per_client = 1024G\nmax_finished_per_client = 1048576\n"
    "[jobs]\nwatchdog_ms = 2147483648\ngrace_ms = 2147483648\ngather_budget_ms = 2147483648\n"
    "hang_ms = 2147483648\n",
    /* one past each */
    "[jobs]\ngather_budget_ms = 2147483649\n",
    "[jobs]\nhang_ms = 2147483649\n",
    "[jobs]\nhang_ms = -1\n",
    "[device]\ndevices = 64\n",
    "[device]\ndevices = 0,1,2,3,4,5,6,7,8\n",
    "[device]\ndevices = 0,\n",
    "[server]\njournal = coop.jobs\n",
    "[device]\nlocal_size = 1025\n",
    "[limits]\nmax_bytes_per_client = 17592186044417\n",
    "[limits]\nmax_bytes_per_client = 18446744073709551615K\n",
    "[server]\nsocket_mode = 01000\n",
    "[device]\nplatform_index = -2\n",
    /* inih's syntax: BOM, CRLF, comments, continuation lines, ':' */
    "\xef\xbb\xbf; comment\r\n[log]\r\nlevel : warn ; inline\r\n# hash\r\n",
    "[kernels]\ndirs = /a\n  /continued\n[log]\nsyslog = yes\n",
    "[device\nbackend = cuda\n",
    "no section = 1\n",
    "[jobs]\n=5000\ngrace_ms =\n",
    "[device]\nbackend = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

#define MAX_SEEDS 256
#define MAX_INPUT 16384

static char *seeds[MAX_SEEDS];
static size_t seed_len[MAX_SEEDS];
static unsigned nseeds;

static void add_seed(const char *p, size_t n) {
  if (nseeds == MAX_SEEDS) return;
  if (n > MAX_INPUT) n = MAX_INPUT;
  seeds[nseeds] = malloc(n ? n : 1);
  if (!seeds[nseeds]) abort();
  memcpy(seeds[nseeds], p, n);
  seed_len[nseeds++] = n;
}

/* Inputs whose outcome is known, checked before the mutations (and then
 * mutated like the seeds): whether config_load_string accepts the text,
 * whether config_validate then accepts it, and a piece of the refusal's
 * message or, when both accept, of config_print's lines (so the value
 * really landed in its field); ndev is what config_devices must return
 * (-2: not checked). The keys added after the first seeds were written
 * (devices, journal, gather_budget_ms, hang_ms) at and past their bounds. */
struct expect {
  const char *text;
  int load, valid;
  const char *has;
  int ndev;
};
static const struct expect expects[] = {
    {"[jobs]\ngather_budget_ms = 1500\nhang_ms = 700\n", 0, 0,
     "watchdog_ms=0 grace_ms=5000 gather_budget_ms=1500 hang_ms=700", 1},
    {"[jobs]\ngather_budget_ms = 0\nhang_ms = 0\nwatchdog_ms = 250\n", 0, 0,
     "watchdog_ms=250 grace_ms=5000 gather_budget_ms=0 hang_ms=0", -2},
    {"[jobs]\ngather_budget_ms = 2147483648\nhang_ms = 2147483648\n", 0, 0,
     "gather_budget_ms=2147483648 hang_ms=2147483648", -2},
    {"[jobs]\ngather_budget_ms = 2147483649\n", -1, 0,
     "fuzz:2: [jobs] gather_budget_ms: bad value \"2147483649\"", -2},
    {"[jobs]\n\nhang_ms = 2147483649\n", -1, 0, "fuzz:3: [jobs] hang_ms: bad value", -2},
    {"[jobs]\nhang_ms = -1\n", -1, 0, "fuzz:2: [jobs] hang_ms: bad value \"-1\"", -2},
    {"[jobs]\nhang_ms = 5s\n", -1, 0, "fuzz:2: [jobs] hang_ms: bad value \"5s\"", -2},
    {"[jobs]\ngather_budget_ms =\n", -1, 0, "fuzz:2: [jobs] gather_budget_ms: bad value", -2},
    {"[jobs]\nhang = 5\n", -1, 0, "fuzz:2: unknown key [jobs] hang", -2},
    {"[server]\njournal = off\n", 0, 0, "journal=off", -2},
    {"[jobs]\nreserve_percent = 100\n", 0, 0, "reserve_percent=100", -2},
    {"", 0, 0, "reserve_percent=50", -2},
    {"[jobs]\nreserve_percent = 101\n", -1, 0, "fuzz:2: [jobs] reserve_percent: bad value", -2},
    {"", 0, 0, "min_deadline_us=100", -2},
    {"[log]\nlevel = warning\n", 0, 0, "", -2}, /* journalctl's word for warn */
    {"[jobs]\nmin_deadline_us = 0\n", 0, 0, "min_deadline_us=0", -2},
    {"[jobs]\nmin_deadline_us = 1000001\n", -1, 0, "fuzz:2: [jobs] min_deadline_us: bad value", -2},
    {"", 0, 0, "max_connections_per_peer=2 request_timeout_ms=2000", -2},
    {"[metrics]\nmax_connections_per_peer = 0\n", 0, -1,
     "[metrics] max_connections_per_peer: 0 is not allowed (want at least 1)", -2},
    {"[metrics]\nrequest_timeout_ms = 0\n", 0, -1,
     "[metrics] request_timeout_ms: 0 is not allowed (want at least 1)", -2},
    {"[server]\njournal = /var/lib/coop/jobs\n", 0, 0, "journal=/var/lib/coop/jobs", -2},
    {"[server]\njournal =\n", 0, 0, "journal=(socket).jobs", -2},
    {"[server]\njournal = coop.jobs\n", 0, -1,
     "[server] journal: \"coop.jobs\" must be an absolute path or off", -2},
    {"[server]\njournal = Off\n", 0, -1, "[server] journal: \"Off\"", -2},
    /* a path of 180 characters: its line fits inih's 200 bytes */
    {"[server]\njournal = /"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabbbbbbbbb\n",
     0, 0, "aaabbbbbbbbb\n", -2},
    /* a longer line is refused by inih itself (the field's 299 characters
     * are reachable only with --set) */
    {"[server]\njournal = /"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabbbbb"
     "bbb"
     "bb\n",
     -1, 0, "syntax error", -2},
    {"[device]\ndevices =\n", 0, 0, "devices=(one)", 1},
    {"[device]\ndevices = all\n", 0, 0, "devices=all", 0},
    {"[device]\ndevices = 0,1\n", 0, 0, "devices=0,1", 2},
    {"[device]\ndevices = 3,3,63\n", 0, 0, "devices=3,3,63", 3},
    {"[device]\ndevices = 0,1,2,3,4,5,6,7\n", 0, 0, "devices=0,1,2,3,4,5,6,7", 8},
    {"[device]\ndevices = 0,1,2,3,4,5,6,7,0\n", 0, -1, "[device] devices: \"0,1,2,3,4,5,6,7,0\"",
     -1},
    {"[device]\ndevices = 64\n", 0, -1, "[device] devices: \"64\": want empty, all", -1},
    {"[device]\ndevices = 0,\n", 0, -1, "[device] devices: \"0,\"", -1},
    {"[device]\ndevices = ,0\n", 0, -1, "[device] devices: \",0\"", -1},
    {"[device]\ndevices = 0 1\n", 0, -1, "[device] devices: \"0 1\"", -1},
    {"[device]\ndevices = -1\n", 0, -1, "[device] devices: \"-1\"", -1},
    {"[device]\ndevices = ALL\n", 0, -1, "[device] devices: \"ALL\"", -1},
};
#define NEXPECTS (sizeof expects / sizeof expects[0])

/* Each expectation, read as the fuzz target reads it (after it). */
static void check_expects(void) {
  for (unsigned i = 0; i < NEXPECTS; i++) {
    const struct expect *e = &expects[i];
    LLVMFuzzerTestOneInput((const uint8_t *)e->text, strlen(e->text));
    static struct config c;
    char err[1024] = "";
    config_defaults(&c);
    int r = config_load_string(&c, "fuzz", e->text, err, sizeof err);
    if (r != e->load)
      fail(r ? "refused, but should be read" : "read, but should be refused", e->text, err);
    if (r == 0) {
      r = config_validate(&c, err, sizeof err);
      if (r != e->valid)
        fail(r ? "invalid, but should be valid" : "valid, but should not be", e->text, err);
    }
    const char *where = err;
    if (r == 0) {
      nprinted = 0;
      printed[0] = '\0';
      config_print(&c, print_line);
      where = printed;
    }
    if (!strstr(where, e->has))
      fail("the message or the printed settings lack what they should say", e->text, where);
    int idx[COOP_WIRE_MAX_DEVICES];
    if (e->ndev != -2 && config_devices(&c, idx, COOP_WIRE_MAX_DEVICES) != e->ndev)
      fail("config_devices counts otherwise", e->text, "");
    add_seed(e->text, strlen(e->text));
  }
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *p = NULL;
  size_t cap = 0, len = 0, k;
  do {
    if (len == cap && !(p = realloc(p, cap = cap ? 2 * cap : 4096))) abort();
    k = fread(p + len, 1, cap - len, f);
    len += k;
  } while (k);
  fclose(f);
  *n = len;
  return p;
}

/* A named file: replayed as is, read by path too (config_load and
 * config_load_string must agree), and a seed for the mutations. */
static int add_file(const char *path) {
  size_t n;
  char *p = slurp(path, &n);
  if (!p) {
    fprintf(stderr, "fuzz_config: %s: %s\n", path, strerror(errno));
    return -1;
  }
  LLVMFuzzerTestOneInput((const uint8_t *)p, n);
  if (!memchr(p, '\0', n)) { /* a NUL ends the string but not the file */
    static struct config a, b;
    char ea[1024], eb[1024], *text = malloc(n + 1);
    if (!text) abort();
    memcpy(text, p, n);
    text[n] = '\0';
    config_defaults(&a);
    config_defaults(&b);
    int ra = config_load(&a, path, ea, sizeof ea);
    int rb = config_load_string(&b, path, text, eb, sizeof eb);
    if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof a)) || (ra && strcmp(ea, eb)))
      fail("config_load and config_load_string disagree", text, ra ? ea : eb);
    free(text);
  }
  add_seed(p, n);
  free(p);
  return 0;
}

static int add_path(const char *path) {
  struct stat st;
  if (stat(path, &st)) {
    fprintf(stderr, "fuzz_config: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return add_file(path);
  DIR *d = opendir(path);
  if (!d) return -1;
  struct dirent *e;
  int r = 0;
  while ((e = readdir(d))) {
    char sub[4096];
    if (e->d_name[0] == '.') continue;
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    if (!stat(sub, &st) && S_ISREG(st.st_mode) && add_file(sub)) r = -1;
  }
  closedir(d);
  return r;
}

static int write_corpus(const char *dir) {
  mkdir(dir, 0755); /* may exist already */
  for (unsigned i = 0; i < NBUILTIN; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%02u", dir, i);
    FILE *f = fopen(path, "wb");
    size_t n = strlen(builtin[i]);
    if (!f || fwrite(builtin[i], 1, n, f) != n || fclose(f)) {
      perror(path);
      return 1;
    }
  }
  for (unsigned i = 0; i < NEXPECTS; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/expect-%02u", dir, i);
    FILE *f = fopen(path, "wb");
    size_t n = strlen(expects[i].text);
    if (!f || fwrite(expects[i].text, 1, n, f) != n || fclose(f)) {
      perror(path);
      return 1;
    }
  }
  printf("fuzz_config: wrote %u seeds to %s\n", (unsigned)(NBUILTIN + NEXPECTS), dir);
  return 0;
}

/* ---- deterministic mutations ---- */

static uint64_t rs = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { return coop_xorshift64(&rs); }

/* Bytes and words that matter to inih and to our parsers. */
static const char *const words[] = {"\n",
                                    "\r\n",
                                    " ",
                                    "\t",
                                    "\0",
                                    "=",
                                    ":",
                                    ";",
                                    "#",
                                    "[",
                                    "]",
                                    "\xef\xbb\xbf",
                                    "-",
                                    "-1",
                                    "0",
                                    "01",
                                    "0x10",
                                    "1024",
                                    "1025",
                                    "4294967295",
                                    "4294967296",
                                    "18446744073709551615",
                                    "18446744073709551616",
                                    "K",
                                    "M",
                                    "G",
                                    "k",
                                    "yes",
                                    "no",
                                    "true",
                                    "debug",
                                    "[device]",
                                    "[server]",
                                    "[limits]",
                                    "[log]",
                                    "[jobs]",
                                    "[kernels]",
                                    "backend",
                                    "socket",
                                    "socket_mode",
                                    "local_size",
                                    "max_bytes_per_client",
                                    "platform_index",
                                    "level",
                                    "syslog",
                                    "dirs",
                                    "devices",
                                    "journal",
                                    "watchdog_ms",
                                    "gather_budget_ms",
                                    "hang_ms",
                                    "all",
                                    "off",
                                    ",",
                                    "0,1",
                                    "63",
                                    "64",
                                    "2147483648",
                                    "2147483649"};
#define NWORDS (sizeof words / sizeof words[0])

static const struct coop_mutator mut = {words, NWORDS, MAX_INPUT, 48, "a9 /", 4, &rs};

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write-corpus")) return write_corpus(argv[2]);
  if (argc < 2 || argv[1][0] == '-' || argv[1][strspn(argv[1], "0123456789")]) {
    fprintf(stderr, "usage: %s N [FILE|DIR ...] | --write-corpus DIR\n", argv[0]);
    return 2;
  }
  unsigned long runs = strtoul(argv[1], NULL, 10);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned i = 0; i < NBUILTIN; i++) {
    LLVMFuzzerTestOneInput((const uint8_t *)builtin[i], strlen(builtin[i]));
    add_seed(builtin[i], strlen(builtin[i]));
  }
  check_expects();
  for (int i = 2; i < argc; i++)
    if (add_path(argv[i])) return 1;
  unsigned long replayed = nread;
  static char buf[MAX_INPUT];
  for (unsigned long i = 0; i < runs; i++) {
    unsigned s = (unsigned)(rnd() % nseeds);
    size_t n = seed_len[s];
    memcpy(buf, seeds[s], n);
    for (unsigned k = 1 + rnd() % 4; k; k--) n = coop_mutate_once(&mut, buf, n);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf(
      "fuzz_config: %lu inputs replayed and %lu mutations in %.2f s (%.0f exec/s): %lu read, "
      "%lu refused, %lu valid\n",
      replayed, runs, secs, (double)nread / (secs > 0 ? secs : 1e-9), nread - nrefused, nrefused,
      nvalid);
  for (unsigned i = 0; i < nseeds; i++) free(seeds[i]);
  return 0;
}
#endif
