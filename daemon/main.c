/*
 * main.c: coopd, the cooperative-kernels daemon. A libuv loop (sockets,
 * signals, timers) plus one device thread per device (device.c), which
 * drives that device's megakernel in a device process (devproc.h). See
 * docs/daemon.md and protocol/PROTOCOL.md.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confreload.h"
#include "kstore.h"
#include "bufs.h"
#include "daemon.h"
#include "device/devproc.h"
#include "journal.h"
#include "listen_fds.h"
#include "log.h"
#include "metrics_http.h"
#include "paths.h"
#include "relocate.h"
#include "sdnotify.h"
#include "trace.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: coopd [--config FILE] [--socket PATH] [--kernels DIRS] [--log-level LEVEL]\n"
      "             [--backend auto|opencl|cuda] [--set SECTION.KEY=VALUE]... [--check-config]\n"
      "             [--help] [--version]\n"
      "Runs the cooperative-kernels daemon in the foreground: it launches the megakernel on\n"
      "the configured device and serves clients (coopctl, libcoop) on a Unix socket.\n"
      "  --config FILE     settings (every key is documented in conf/coopd.ini);\n"
      "                    without it, PREFIX/etc/coop/coopd.ini beside an installed\n"
      "                    coopd (PREFIX/sbin; /etc/coop/coopd.ini for /usr/sbin),\n"
      "                    else the built-in defaults. The flags\n"
      "                    below override the file; each key of the file one overrides\n"
      "                    is logged (info) at start and at each reload\n"
      "  --socket PATH     listen here (default $XDG_RUNTIME_DIR/coop.sock, or\n"
      "                    /run/coop/coop.sock for root or without XDG_RUNTIME_DIR)\n"
      "  --kernels DIRS    colon-separated directories of *.cl kernels (default\n"
      "                    PREFIX/share/coop/kernels, the installed ones)\n"
      "  --log-level L     error, warn, info (default) or debug\n"
      "  --backend B       auto (default: an OpenCL GPU with fine-grained SVM, else an\n"
      "                    NVIDIA GPU through CUDA, else PoCL's CPU device), opencl or cuda;\n"
      "                    the choice and why are logged and shown by `coopctl stats`\n"
      "  --set S.K=V       any config key, e.g. --set jobs.grace_ms=2000\n"
      "  --check-config    validate the settings and the kernels' directives, print them\n"
      "                    (and each key a flag set, over which value of the file),\n"
      "                    compile the kernels on the configured devices, exit\n"
      "Signals: SIGTERM/SIGINT stop (jobs get [jobs] grace_ms to finish, then are\n"
      "cancelled; every client is told). SIGHUP reads the settings that apply live and\n"
      "reloads the kernels: the new set is built beside the running megakernel; if it\n"
      "builds, new jobs wait, running cooperative jobs whose kernel stays are suspended\n"
      "and carried across, the other running ones get grace_ms to finish, then the new\n"
      "megakernel replaces the old one; if it does not build, the old one keeps running\n"
      "and the compiler log is logged.\n"
      "Each device's megakernel runs in a child process (coopd --device-process, started\n"
      "by coopd itself); if one dies or a kernel hangs, only that device's jobs are lost.\n"
      "Exit status: 0 after a clean stop; 1 on a start-up error (a bad configuration\n"
      "file or kernel, a device that does not start, a --set value that the checks across\n"
      "keys refuse, e.g. device.local_size=3); 2 on bad usage (an unknown option, a --set\n"
      "or --log-level value its key cannot take).\n");
}

static void print_line(const char *l) { printf("%s\n", l); }

/* --set section.key=value */
static int set_flag(struct config *c, const char *arg, char *err, size_t errlen) {
  char buf[1200];
  snprintf(buf, sizeof buf, "%s", arg);
  char *dot = strchr(buf, '.'), *eq = strchr(buf, '=');
  if (!dot || !eq || eq < dot)
    return snprintf(err, errlen, "--set %s: want SECTION.KEY=VALUE", arg), -1;
  *dot = *eq = '\0';
  return config_set(c, buf, dot + 1, eq + 1, err, errlen);
}

struct opts {
  const char *config;
  int check;
};

static const struct option lo[] = {
    {"config", required_argument, 0, 'c'},  {"socket", required_argument, 0, 's'},
    {"kernels", required_argument, 0, 'k'}, {"log-level", required_argument, 0, 'l'},
    {"backend", required_argument, 0, 'b'}, {"set", required_argument, 0, 'S'},
    {"check-config", no_argument, 0, 'C'},  {"help", no_argument, 0, 'h'},
    {"version", no_argument, 0, 'V'},       {0, 0, 0, 0}};

/* The flags that stand for one config key each. */
static const struct {
  int ch;
  const char *flag, *section, *name;
} flag_keys[] = {{'s', "--socket", "server", "socket"},
                 {'k', "--kernels", "kernels", "dirs"},
                 {'l', "--log-level", "log", "level"},
                 {'b', "--backend", "device", "backend"}};

/* A flag that sets a config key; other flags are left to the caller. */
static int apply_flag(struct config *c, int ch, const char *arg, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof flag_keys / sizeof flag_keys[0]; i++)
    if (ch == flag_keys[i].ch)
      return config_set(c, flag_keys[i].section, flag_keys[i].name, arg, err, errlen);
  if (ch == 'S') return set_flag(c, arg, err, errlen);
  return 0;
}

/* The key a flag sets, as a row of the key table, and the flag as written
 * ("--socket", "--set server.journal"); NULL for a flag that sets none. */
static const struct config_key *flag_key(int ch, const char *arg, char *flag, size_t n) {
  for (size_t i = 0; i < sizeof flag_keys / sizeof flag_keys[0]; i++)
    if (ch == flag_keys[i].ch) {
      snprintf(flag, n, "%s", flag_keys[i].flag);
      return config_key_find(flag_keys[i].section, flag_keys[i].name);
    }
  char sec[64] = "", name[128] = "";
  if (ch != 'S' || sscanf(arg, "%63[^.].%127[^=]=", sec, name) != 2) return NULL;
  snprintf(flag, n, "--set %s.%s", sec, name);
  return config_key_find(sec, name);
}

/* The built-in defaults, with the kernels of this installation (paths.h). */
static void defaults(struct config *c) {
  config_defaults(c);
  char dir[sizeof c->kernel_dirs];
  if (paths_installed_kernels(dir, sizeof dir) == 0) memcpy(c->kernel_dirs, dir, strlen(dir) + 1);
}

/* The command line as given, for SIGHUP to read the settings again. */
static struct {
  int argc;
  char **argv;
  const char *config;
} args;

/* Command line over the file over the defaults: the file is read first. */
static int parse_args(int argc, char **argv, struct config *c, struct opts *o) {
  char err[1400];
  int ch;
  memset(o, 0, sizeof *o);
  for (int pass = 0; pass < 2; pass++) {
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
      int r = 0;
      if (ch == '?') return usage(stderr), 2;
      if (pass == 0) {
        if (ch == 'h') return usage(stdout), 0;
        if (ch == 'V') return printf("coopd %s\n", COOP_VERSION), 0;
        if (ch == 'c') o->config = optarg;
        if (ch == 'C') o->check = 1;
        continue;
      }
      r = apply_flag(c, ch, optarg, err, sizeof err);
      if (r) return fprintf(stderr, "coopd: %s\n", err), 2;
    }
    if (optind < argc) return fprintf(stderr, "coopd: unexpected \"%s\"\n", argv[optind]), 2;
    /* no --config: an installed coopd reads the settings installed beside it */
    static char installed[4096];
    if (pass == 0 && !o->config && paths_installed_config(installed, sizeof installed) == 0)
      o->config = installed;
    if (pass == 0 && o->config && config_load(c, o->config, err, sizeof err))
      return fprintf(stderr, "coopd: %s\n", err), 1;
  }
  /* a check across keys has no line to name: say which file was read */
  if (config_validate(c, err, sizeof err))
    return fprintf(stderr, "coopd: %s (settings: %s)\n", err, o->config ? o->config : "no file"), 1;
  args.argc = argc;
  args.argv = argv;
  args.config = o->config;
  return -1; /* go on */
}

/* Each key a flag set, to say(): its value, the flag, and the settings
 * file's own value that the flag overrides. Only the keys the file names
 * too unless all: an operator who edits the file and sees nothing change
 * (coopd.service passes --socket and --set server.journal) is told why at
 * start, at each SIGHUP, and by --check-config, which says every one. */
static void flags_over_file(const struct config *c, int all, void (*say)(const char *)) {
  int ch;
  optind = 1;
  opterr = 0; /* the flags were checked at start */
  while ((ch = getopt_long(args.argc, args.argv, "", lo, NULL)) != -1) {
    char flag[200], file[1100] = "", now[1100], line[2600];
    const struct config_key *k = ch == '?' ? NULL : flag_key(ch, optarg, flag, sizeof flag);
    int named = k && args.config
                    ? config_file_sets(args.config, k->section, k->name, file, sizeof file) > 0
                    : 0;
    if (!k || (!named && !all)) continue;
    config_key_show(k, c, now, sizeof now);
    int w = snprintf(line, sizeof line, "[%s] %s = %s from the command line (%s)", k->section,
                     k->name, now, flag);
    if (named)
      snprintf(line + w, sizeof line - (size_t)w, ", overriding \"%s\" in %s", file, args.config);
    say(line);
  }
}

static void say_info(const char *l) { log_info("%s", l); }

/* The settings again, as at start: defaults, the file, the flags. */
static int reread_config(struct config *c, char *err, size_t errlen) {
  defaults(c);
  if (args.config && config_load(c, args.config, err, errlen)) return -1;
  int ch;
  optind = 1;
  opterr = 0; /* the flags were checked at start */
  while ((ch = getopt_long(args.argc, args.argv, "", lo, NULL)) != -1)
    if (ch != '?' && apply_flag(c, ch, optarg, err, errlen)) return -1;
  if (!config_validate(c, err, errlen)) return 0;
  size_t n = strlen(err);
  snprintf(err + n, errlen - n, " (settings: %s)", args.config ? args.config : "no file");
  return -1;
}

/* [kernels] authors and [limits] priority_users looked up again: a name
 * that no longer resolves keeps the list read before (logged), so a typo
 * locks nobody out. [limits] subordinate_ids read again: a file that
 * cannot be read keeps the ranges read before. Connections already open
 * keep the user they were taken for. */
static void users_update(struct daemon *dm) {
  struct subids ids;
  struct authors a;
  static struct priority_rules p;
  char err[600];
  if (authors_parse(&a, dm->cfg.authors, err, sizeof err))
    log_error("%s; the authors read before stay", err);
  else
    dm->authors = a;
  if (priority_parse(&p, dm->cfg.priority_users, err, sizeof err))
    log_error("%s; the priorities read before stay", err);
  else
    dm->prio = p;
  if (subids_read(dm->loop, &ids, dm->cfg.subordinate_ids, err, sizeof err)) {
    log_error("%s; the ranges read before stay", err);
  } else {
    subids_free(&dm->subids);
    dm->subids = ids;
  }
}

/* SIGHUP: the settings that may change while running (confreload.h), then
 * the kernels (reload.c). systemd hears RELOADING=1 now and READY=1 when
 * the kernel reload has ended (reload.c), or now if none started. */
static void on_hup(struct daemon *dm) {
  sdnotify_reloading();
  static struct config nc;
  char err[1400];
  int bad = reread_config(&nc, err, sizeof err);
  /* told to systemd too (reload_notify): its "reload ok" hid a settings
   * file that was refused, the edit ignored */
  snprintf(dm->settings_refused, sizeof dm->settings_refused, "%.200s", bad ? err : "");
  if (bad)
    log_error("SIGHUP: %s; the running settings stay", err);
  else if (confreload_apply(&dm->cfg, &nc) == 0)
    log_info("SIGHUP: settings read again%s", args.config ? "" : " (no --config file)");
  if (!bad) flags_over_file(&nc, 0, say_info); /* the file's edit of those did nothing */
  log_syslog_check();                          /* syslog may be on now, or its daemon gone */
  users_update(dm);
  reload_start(dm);
  if (!dm->reload) reload_notify(dm); /* it did not start: STATUS says why */
}

/* ---- shutdown ---- */

static void on_handle_close(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void on_dev_stopped(struct dev *d, void *user) {
  struct daemon *dm = user;
  if (++dm->ndev_stopped < dm->ndev) return; /* the last one goes on */
  session_shutdown_all(dm);
  dbuf_free_all(dm); /* kept ones: their device processes are gone */
  uv_timer_stop(&dm->hard_stop);
  journal_close(dm->journal, dm->next_job); /* every job has finished */
  dm->journal = NULL;
  for (unsigned i = 0; i < dm->ndev; i++) dev_free(dm->devs[i]);
  dm->ndev = 0;
  loopspin_stop(&dm->spin);
  uv_walk(dm->loop, on_handle_close, NULL);
  /* Closing the signal handles restored the default actions: a late
   * SIGTERM must not kill the exit. */
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  log_info("stopped");
}

/* The loop's spin, every turn: what the device threads announced
 * (loopspin.h), and what clients wrote in their rings (sess_ring.c). ndev is read again each time:
 * the last device's stop frees them all (on_dev_stopped) and sets it to 0. */
static void poll_devices(void *arg) {
  struct daemon *dm = arg;
  for (unsigned i = 0; i < dm->ndev; i++) dev_poll(dm->devs[i]);
  session_poll_rings(dm, atomic_load(&dm->spin.spinning));
}

/* A new turn of the loop: each user's share of it starts anew
 * (session.c, user_may). */
static void on_turn(uv_check_t *h) {
  struct daemon *dm = h->data;
  dm->turn++;
}

/* A frame's warm window begun on the loop: how late, for the trace, then
 * the loop's preparation for it. */
static void warm_frame(void *arg, const void *key, int64_t from) {
  if (coopd_tracing) trace_window_write(-1, from, coop__now_ns());
  session_warm_frame(arg, key);
}

static void on_hard_stop(uv_timer_t *t) {
  log_error("the device did not stop: a non-cooperative kernel cannot be cancelled; exiting");
  _exit(1);
}

static void stop(struct daemon *dm, const char *why) {
  if (dm->stopping) return;
  dm->stopping = 1;
  sdnotify("STOPPING=1");
  log_info("%s: stopping (in-flight jobs get %u ms)", why, dm->cfg.grace_ms);
  server_stop_listening(dm);
  metrics_http_stop(dm);
  /* the device thread gives up on hung kernels after grace + hang_ms; this
   * is the last resort if even that does not come */
  uint64_t hang = dm->cfg.hang_ms ? dm->cfg.hang_ms : 20000;
  uv_timer_start(&dm->hard_stop, on_hard_stop, (uint64_t)dm->cfg.grace_ms + hang + 10000, 0);
  for (unsigned i = 0; i < dm->ndev; i++) dev_stop(dm->devs[i], dm->cfg.grace_ms, on_dev_stopped);
}

static void on_signal(uv_signal_t *s, int signum) {
  struct daemon *dm = s->data;
  if (signum == SIGHUP) {
    on_hup(dm);
    return;
  }
  stop(dm, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* The journal of accepted jobs (journal.h), unless [server] journal = off. */
static int open_journal(struct daemon *dm, char *err, size_t errlen) {
  if (!strcmp(dm->cfg.journal, "off")) return 0;
  char path[600];
  if (dm->cfg.journal[0])
    snprintf(path, sizeof path, "%s", dm->cfg.journal);
  else
    snprintf(path, sizeof path, "%s.jobs", dm->cfg.socket);
  if (paths_check_dir(dm->loop, path, "journal", err, errlen) ||
      journal_open(&dm->journal, dm->loop, path, &dm->next_job, err, errlen))
    return -1;
  log_info("journal %s (%s): job ids continue after %llu; %u lost jobs remembered", path,
           journal_state(dm->journal), (unsigned long long)dm->next_job,
           journal_nlost(dm->journal));
  return 0;
}

/* One megakernel per configured device ([device] devices). 0, or -1 after
 * logging why. A device opened before a later one failed is left to the
 * process exit (its megakernel runs; closing it is not worth a hang). */
static int open_devices(struct daemon *dm) {
  char err[2048];
  int idx[COOP_WIRE_MAX_DEVICES];
  int n = config_devices(&dm->cfg, idx, COOP_WIRE_MAX_DEVICES), all = n == 0;
  if (all)
    for (n = 0; n < (int)COOP_WIRE_MAX_DEVICES; n++) idx[n] = n;
  for (int i = 0; i < n; i++) {
    /* CUDA: one primary context per GPU, and a module load in it waits for
     * the megakernel already running there (megakernel/backends/cuda.c, cu_load), so
     * a second megakernel on one GPU would hang coopd's start. */
    for (int j = 0; j < i; j++) {
      char backend[16];
      dev_backend(dm->devs[j], backend, sizeof backend);
      if (idx[j] == idx[i] && !strcmp(backend, "cuda")) {
        log_error(
            "[device] devices: index %d is listed twice; on the CUDA backend one GPU runs "
            "one megakernel (a repeated index needs the OpenCL backend)",
            idx[i]);
        _exit(1);
      }
    }
    int e = dev_open(&dm->devs[i], &dm->cfg, (unsigned)i, idx[i], dm->ks, dm->loop,
                     &session_dev_hooks, dm, err, sizeof err);
    /* a stored kernel of an author's that the compiler's log names (one
     * an older coopd stored, which the rules refuse since) is left out
     * alone: the other authors' kernels serve */
    while (e == COOP_EBUILD && i == 0 && kset_drop_failing(dm->ks, err, NULL, NULL))
      e = dev_open(&dm->devs[i], &dm->cfg, (unsigned)i, idx[i], dm->ks, dm->loop,
                   &session_dev_hooks, dm, err, sizeof err);
    if (e && i == 0 && kset_authored(dm->ks) && (e == COOP_EBUILD || e == COOP_ELOST)) {
      /* a stored kernel of an author's that no longer builds, and that
       * the log does not name (a compiler that crashes on it) is no
       * reason for every user to lose the device: the shipped ones serve.
       * Only a build's failure, or the device process's death: a device
       * that is not there (no CUDA) is no author's doing, and the log
       * blamed the authors' kernels for it. */
      log_error("cannot start device 0 with the kernels authors added (%s); starting without them",
                err);
      for (unsigned k = dm->ks->n; k-- > 0;)
        if (dm->ks->k[k].owner != KDEF_SHIPPED) kset_remove(dm->ks, k);
      e = dev_open(&dm->devs[i], &dm->cfg, (unsigned)i, idx[i], dm->ks, dm->loop,
                   &session_dev_hooks, dm, err, sizeof err);
    }
    if (e && all && i > 0) {
      log_info("devices = all: %d devices (index %d: %s)", i, idx[i], err);
      break;
    }
    if (e) {
      log_error("cannot start device %d (index %d): %s", i, idx[i], err);
      if (i > 0) _exit(1);
      return -1;
    }
    dm->ndev = (unsigned)i + 1;
    struct dev *d = dm->devs[i];
    char note[1024], name[256];
    dev_backend_note(d, note, sizeof note);
    dev_name(d, name, sizeof name);
    log_info("device %d: backend %s", i, note);
    log_info("device %d \"%s\": %u compute units, %u workers; %u kernels", i, name,
             dev_compute_units(d), dev_workers(d), dm->ks->n);
  }
  return 0;
}

/* systemd (Type=notify): the devices run and the socket accepts. */
static void notify_ready(struct daemon *dm) {
  char m[400];
  snprintf(m, sizeof m, "READY=1\nSTATUS=listening on %.256s, %u device%s", dm->cfg.socket,
           dm->ndev, dm->ndev == 1 ? "" : "s");
  int e = sdnotify(m);
  if (e < 0) log_warn("NOTIFY_SOCKET: %s", strerror(-e));
}

/* coop.socket (listen_fds.h): the socket systemd bound, taken before
 * anything starts a child. It replaces [server] socket. 0, or 1 on error. */
static int take_listen_fd(struct daemon *dm) {
  char path[sizeof dm->cfg.socket], err[300];
  int fd = listen_fds_take(path, sizeof path, err, sizeof err);
  if (fd == -2) return fprintf(stderr, "coopd: %s\n", err), 1;
  if (fd < 0) return 0;
  dm->listen_fd = fd;
  dm->listen_inherited = 1;
  if (path[0]) memcpy(dm->cfg.socket, path, strlen(path) + 1);
  return 0;
}

/* The kernels authors added, after the shipped ones: a store that cannot
 * be trusted is logged and left out, never a reason not to start. With
 * authors configured, the store is made ready for their first kernel. */
static void load_authored(struct daemon *dm, int prepare) {
  char err[1400];
  if (prepare && dm->cfg.authors[0] && kstore_prepare(dm->cfg.authored_dir, err, sizeof err))
    log_error("[kernels] authored_dir: %s: authors cannot add kernels", err);
  else if (kstore_load(dm->ks, dm->cfg.authored_dir, err, sizeof err))
    log_error("[kernels] authored_dir: %s: the authors' kernels are left out", err);
}

static int run(struct daemon *dm) {
  char err[2048];
  uv_loop_t *loop = dm->loop;
  /* First: a signal before the loop runs waits in libuv for it (a HUP
   * reloads, a TERM stops, once the devices are up). Started after the
   * listen, as they were, a signal in between (the socket there, the
   * devices' threads starting) had its default action: coopd died and left
   * its socket file. */
  const int sigs[3] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(loop, &dm->sig[i]);
    dm->sig[i].data = dm;
    uv_signal_start(&dm->sig[i], on_signal, sigs[i]);
  }
  /* before the journal (it lives beside the socket by default) and before
   * the devices (seconds): a refusal comes at once. A socket systemd
   * passed (coop.socket) is checked by nobody here: it is bound, listening
   * and ours, so the squatter check would find coopd itself there. */
  if (!dm->listen_inherited && (paths_check_dir(loop, dm->cfg.socket, "socket", err, sizeof err) ||
                                paths_claim_socket(loop, dm->cfg.socket, err, sizeof err))) {
    log_error("%s", err);
    return 1;
  }
  if (open_journal(dm, err, sizeof err)) {
    log_error("%s ([server] journal = off runs without one)", err);
    return 1;
  }
  if (open_devices(dm)) {
    journal_close(dm->journal, dm->next_job);
    return 1;
  }
  uv_timer_init(loop, &dm->hard_stop);
  loopspin_init(&dm->spin, loop);
  uv_check_init(loop, &dm->turn_check);
  dm->turn_check.data = dm;
  uv_check_start(&dm->turn_check, on_turn);
  uv_unref((uv_handle_t *)&dm->turn_check); /* it keeps no loop running */
  if (server_listen(dm, err, sizeof err) || metrics_http_start(dm, err, sizeof err)) {
    log_error("%s", err);
    server_stop_listening(dm);
    dm->stopping = 1;
    for (unsigned i = 0; i < dm->ndev; i++) dev_stop(dm->devs[i], 0, on_dev_stopped);
    dm->exit_code = 1;
  } else {
    if (dm->listen_inherited)
      log_info("listening on %s (socket activation: its mode is the socket unit's)",
               dm->cfg.socket);
    else
      log_info("listening on %s (mode %04o)", dm->cfg.socket, dm->cfg.socket_mode);
  }
  loopspin_on_turn(&dm->spin, poll_devices, dm);
  loopspin_on_window(&dm->spin, warm_frame, dm);
  for (unsigned i = 0; i < dm->ndev; i++) dev_set_loop_spin(dm->devs[i], &dm->spin.spinning);
  for (unsigned i = 0; i < dm->ndev; i++)
    if (dev_start(dm->devs[i])) {
      log_error("cannot start the device thread");
      _exit(1);
    }
  if (!dm->exit_code) notify_ready(dm);
  uv_run(loop, UV_RUN_DEFAULT);
  return dm->exit_code;
}

/* Every connection, every descriptor a client passes (queued with its
 * frame, then held by its job or buffer operation) and every device buffer
 * operation's memfd is one of coopd's descriptors, and one user's [limits]
 * allow thousands of them (docs/faults.md, "Resources a client can
 * exhaust"). A coopd started from a shell had the shell's soft limit, 1024
 * on Debian whatever the hard one (524288), so one user could leave none
 * for the others' connections and jobs. The soft limit goes up to the hard
 * one, as systemd advises programs that need many (coopd.service sets both
 * with LimitNOFILE). */
static void raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  unsigned long long was = (unsigned long long)rl.rlim_cur;
  rl.rlim_cur = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
    log_info("descriptors: soft limit %llu raised to the hard limit, %llu", was,
             (unsigned long long)rl.rlim_max);
}

/* --device-process FD's descriptor: the end of the SOCK_SEQPACKET pair
 * coopd made for it (devproc.c, spawn); -1 for anything else. Run by hand,
 * `coopd --device-process 7` (or `abc`, read as 0: stdin) exited 0 in
 * silence, having served nothing. */
static int device_process_fd(const char *arg) {
  char *end;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno || end == arg || *end || v < 0 || v > INT_MAX) return -1;
  int type;
  socklen_t len = sizeof type;
  if (getsockopt((int)v, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_SEQPACKET) return -1;
  return (int)v;
}

int main(int argc, char **argv) {
  /* A device process (devproc.h): coopd runs itself for each device. */
  if (argc >= 2 && !strcmp(argv[1], "--device-process")) {
    int fd = argc == 3 ? device_process_fd(argv[2]) : -1;
    if (fd >= 0) return dp_child_main(fd);
    fprintf(stderr,
            "coopd: --device-process FD is how coopd starts its own device processes "
            "(FD: its end of their socket pair); it is not run by hand\n");
    return 2;
  }
  static struct daemon dm;
  defaults(&dm.cfg);
  metrics_start(&dm.met);
  struct opts o;
  int r = parse_args(argc, argv, &dm.cfg, &o);
  if (r >= 0) return r;
  log_setup(dm.cfg.log_level, 1, dm.cfg.log_syslog);
  log_syslog_check();
  if (!o.check) flags_over_file(&dm.cfg, 0, say_info); /* --check-config prints them */
  dm.listen_fd = -1;
  dm.sock_dir_fd = -1;
  if (take_listen_fd(&dm)) return 1;
  char err[1400];
  dm.ks = malloc(sizeof *dm.ks);
  if (!dm.ks) return 1;
  if (kset_load(dm.ks, dm.cfg.kernel_dirs, err, sizeof err) ||
      authors_parse(&dm.authors, dm.cfg.authors, err, sizeof err) ||
      priority_parse(&dm.prio, dm.cfg.priority_users, err, sizeof err) ||
      subids_read(uv_default_loop(), &dm.subids, dm.cfg.subordinate_ids, err, sizeof err)) {
    fprintf(stderr, "coopd: %s\n", err);
    return 1;
  }
  load_authored(&dm, !o.check);
  if (o.check) {
    printf("settings: %s\n", o.config ? o.config : "built-in defaults (no file)");
    config_print(&dm.cfg, print_line);
    flags_over_file(&dm.cfg, 1, print_line);
    for (unsigned i = 0; i < dm.ks->n; i++)
      printf("kernel %s (%s) from %s\n", dm.ks->k[i].name,
             dm.ks->k[i].cooperative ? "cooperative" : "noncooperative", dm.ks->k[i].path);
    char log[8192];
    fflush(stdout);
    /* the widths are printed below as a table: not in the log as well */
    if (dm.cfg.log_level > LOG_LV_WARN) log_setup(LOG_LV_WARN, 1, dm.cfg.log_syslog);
    printf("kernel widths (each kernel alone, then the bound):\n");
    r = reload_check_build(&dm.cfg, dm.ks, stdout, log, sizeof log);
    if (r)
      fprintf(stderr, "coopd: the kernels do not build: %s\n", log);
    else
      printf("kernels compile\nconfiguration OK\n");
    kset_free(dm.ks);
    free(dm.ks);
    return r ? 1 : 0;
  }
  signal(SIGPIPE, SIG_IGN);
  raise_nofile();
  if (trace_open(err, sizeof err)) { /* before the device threads: they read the flag */
    fprintf(stderr, "coopd: %s\n", err);
    return 1;
  }
  if (coopd_tracing) {
    dp_set_call_hook(trace_call_write, TRACE_CALL_MIN_NS);
    dev_set_window_hook(trace_window_write);
  }
  dm.loop = uv_default_loop();
  r = run(&dm);
  uv_loop_close(dm.loop);
  subids_free(&dm.subids);
  jobpool_free(&dm.jobpool);
  kset_free(dm.ks);
  free(dm.ks);
  return r;
}
