/*
 * test_daemon_state.c: where coopd keeps its files (unsafe paths and
 * directories refused, only its own socket removed at the stop), its
 * journal (forged lines skipped, a full disk), kernels that are FIFOs,
 * and job times under CPU load.
 */
#define _GNU_SOURCE /* memmem */
#include <check.h>
#include <sys/mount.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coop_util.h" /* coop__now_ns: the clock coopd stamps jobs with */
#include "wire.h"
#include "coopd_argv.h"
#include "daemon_harness.h"

/* ---- state: where coopd keeps its files, its journal, its clock ---- */

/* coopd in the foreground on sock with these --set flags, stderr into log:
 * its exit status, or -1 if it still ran after limit_s (then killed). */
static int coopd_try(const char *sock, const char *const *sets, const char *log, int limit_s) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (!freopen(log, "w", stderr)) _exit(126);
    const char *argv[16] = {COOPD_PATH, "--socket", sock, "--kernels", KERNEL_DIR};
    int n = 5;
    for (int i = 0; sets && sets[i] && n < 14; i++) {
      argv[n++] = "--set";
      argv[n++] = sets[i];
    }
    argv[n] = NULL;
    execv(COOPD_PATH, (char *const *)argv);
    _exit(127);
  }
  int st;
  for (int i = 0; i < limit_s * 20; i++, msleep(50))
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

/* coopd refused to start within 20 s, and its log says why. */
static void refused(const char *sock, const char *const *sets, const char *log, const char *why) {
  int r = coopd_try(sock, sets, log, 20);
  if (r != 1 || !log_has(log, why)) log_print(log);
  ck_assert_msg(r == 1, "coopd: exit status %d, want 1 (a refusal at start)", r);
  ck_assert_msg(log_has(log, why), "the log lacks \"%s\"", why);
}

static void file_is(const char *path, const char *want) {
  char got[256] = "";
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s is gone", path);
  size_t n = fread(got, 1, sizeof got - 1, f);
  fclose(f);
  got[n] = 0;
  ck_assert_str_eq(got, want);
}

/* A socket bound and listening at path, as a squatter's would be. */
static int listen_at(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  ck_assert_uint_lt(strlen(path), sizeof a.sun_path);
  memcpy(a.sun_path, path, strlen(path) + 1);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(fd, 4), 0);
  return fd;
}

/* Row #10: the socket and the journal where another user could have put
 * something first. Each refusal comes before the device opens (quick); the
 * FIFO at the journal path once blocked coopd's start for good, the file at
 * the socket path was deleted, the world-writable directory was used. */
START_TEST(unsafe_paths_are_refused) {
  char dir[64] = "/tmp/coopd-state-XXXXXX", sub[128], sock[192], log[128], jobs[224];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(log, sizeof log, "%s/coopd.log", dir);
  snprintf(sub, sizeof sub, "%s/run", dir);
  snprintf(sock, sizeof sock, "%s/coop.sock", sub);
  snprintf(jobs, sizeof jobs, "%s.jobs", sock);
  ck_assert_int_eq(mkdir(sub, 0755), 0);

  ck_assert_int_eq(chmod(sub, 0777), 0); /* anyone may put files there */
  refused(sock, NULL, log, "writable by every user without the sticky bit");
  ck_assert_int_ne(access(sock, F_OK), 0);
  if (geteuid() == 0) { /* only root can give the directory to another user */
    ck_assert_int_eq(chmod(sub, 0755), 0);
    ck_assert_int_eq(chown(sub, 65534, 65534), 0);
    refused(sock, NULL, log, "owned by another user");
    ck_assert_int_eq(chown(sub, 0, 0), 0);
  } else {
    fprintf(stderr, "unsafe_paths_are_refused: not root, the directory of another user skipped\n");
  }
  ck_assert_int_eq(chmod(sub, 0755), 0);

  file_write(sock, "not a socket\n"); /* coopd removes only a stale socket */
  refused(sock, NULL, log, "not a socket");
  file_is(sock, "not a socket\n");
  ck_assert_int_eq(unlink(sock), 0);

  if (geteuid() == 0) { /* a sticky directory, as /tmp: what another user put there first */
    char target[160], got[320];
    snprintf(target, sizeof target, "%s/target", dir);
    file_write(target, "root's\n");
    ck_assert_int_eq(chmod(sub, 01777), 0);
    close(listen_at(sock)); /* their socket, no one listening: removed once, as stale */
    ck_assert_int_eq(lchown(sock, 65534, 65534), 0);
    snprintf(got, sizeof got, "socket %s: a socket of another user (uid 65534)", sock);
    refused(sock, NULL, log, got);
    struct stat st;
    ck_assert_int_eq(lstat(sock, &st), 0);
    ck_assert_msg(S_ISSOCK(st.st_mode) && st.st_uid == 65534, "their socket was replaced");
    ck_assert_int_eq(unlink(sock), 0);
    ck_assert_int_eq(symlink(target, sock), 0); /* their link: not a socket, never followed */
    ck_assert_int_eq(lchown(sock, 65534, 65534), 0);
    refused(sock, NULL, log, "uid 65534); coopd removes only a stale socket");
    ck_assert_int_eq(unlink(sock), 0);
    ck_assert_int_eq(symlink(target, jobs), 0); /* their link at the journal's path */
    ck_assert_int_eq(lchown(jobs, 65534, 65534), 0);
    snprintf(got, sizeof got, "journal %s: a symbolic link (uid 65534)", jobs);
    refused(sock, NULL, log, got);
    file_is(target, "root's\n");
    ck_assert_int_eq(unlink(jobs), 0);
    ck_assert_int_eq(unlink(target), 0);
    ck_assert_int_eq(chmod(sub, 0755), 0);
  }

  int squat = listen_at(sock); /* a live server: refused, left alone */
  refused(sock, NULL, log, "another coopd is listening there");
  struct conn c;
  ck_assert_int_eq(conn_open(&c, sock), 0);
  conn_close(&c);
  close(squat);
  ck_assert_int_eq(unlink(sock), 0);

  ck_assert_int_eq(mkfifo(jobs, 0600), 0); /* a plain open blocks until a writer comes */
  refused(sock, NULL, log, "not a regular file");
  ck_assert_int_eq(unlink(jobs), 0);
  file_write(jobs, "coop-journal 1\nL 5 0 sweep\n");
  ck_assert_int_eq(chmod(jobs, 0666), 0);
  refused(sock, NULL, log, "writable by other users");
  if (geteuid() == 0) {
    ck_assert_int_eq(chmod(jobs, 0600), 0);
    ck_assert_int_eq(chown(jobs, 65534, 65534), 0);
    refused(sock, NULL, log, "owned by another user");
  }
  ck_assert_int_eq(unlink(jobs), 0);
  file_write(jobs, "my notes\n"); /* not a journal: not overwritten */
  ck_assert_int_eq(chmod(jobs, 0600), 0);
  refused(sock, NULL, log, "not a coop journal");
  file_is(jobs, "my notes\n");
  /* a journal past its bound (16 MiB): refused, not started anew */
  ck_assert_int_eq(truncate(jobs, 17 << 20), 0);
  refused(sock, NULL, log, "larger than 16 MiB");
  struct stat big;
  ck_assert_int_eq(stat(jobs, &big), 0);
  ck_assert_int_eq(big.st_size, 17 << 20);
  ck_assert_int_eq(access(sock, F_OK), -1); /* no refusal left a socket behind */
  unlink(jobs);
  unlink(log);
  rmdir(sub);
  rmdir(dir);
}
END_TEST

/* The directories above the socket's (D/coop/coop.sock with D writable by
 * all and not sticky, docs/daemon.md "Sockets"): another user could rename
 * D/coop away, make a D/coop of theirs and listen at the socket's path, and
 * receive the clients' data. Now coopd refuses any directory above that another user
 * could write (world or group, unless sticky) or owns, as named and as
 * reached through a symlink, naming it, and creates nothing under it. A
 * sticky one, as /tmp, passes: the refusal that follows is another one. */
START_TEST(unsafe_ancestors_are_refused) {
  char dir[64] = "/tmp/coopd-up-XXXXXX", up[96], sub[128], sock[160], log[96], link[96], lsock[128],
       want[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(log, sizeof log, "%s/coopd.log", dir);
  snprintf(up, sizeof up, "%s/up", dir);
  snprintf(sub, sizeof sub, "%s/coop", up);
  snprintf(sock, sizeof sock, "%s/coop.sock", sub);
  snprintf(link, sizeof link, "%s/link", dir);
  snprintf(lsock, sizeof lsock, "%s/coop.sock", link);
  ck_assert_int_eq(mkdir(up, 0755), 0);
  ck_assert_int_eq(mkdir(sub, 0755), 0);

  ck_assert_int_eq(chmod(up, 0777), 0);
  snprintf(want, sizeof want,
           "socket %s: the directory %s above it is writable by every user without the sticky "
           "bit (uid %u, mode 0777)",
           sock, up, (unsigned)geteuid());
  refused(sock, NULL, log, want);
  ck_assert_int_eq(chmod(up, 0775), 0);
  snprintf(want, sizeof want, "the directory %s above it is writable by its group", up);
  refused(sock, NULL, log, want);
  if (geteuid() == 0) {
    ck_assert_int_eq(chmod(up, 0755), 0);
    ck_assert_int_eq(chown(up, 65534, 65534), 0);
    snprintf(want, sizeof want, "the directory %s above it is owned by another user", up);
    refused(sock, NULL, log, want);
    ck_assert_int_eq(chown(up, 0, 0), 0);
  }
  ck_assert_int_eq(chmod(up, 0777), 0);
  ck_assert_int_eq(symlink(sub, link), 0); /* dir/link/coop.sock is dir/up/coop/coop.sock */
  snprintf(want, sizeof want, "socket %s: the directory %s above it is writable", lsock, up);
  refused(lsock, NULL, log, want);
  ck_assert_int_eq(rmdir(sub), 0); /* not made under a directory refused */
  snprintf(want, sizeof want, "the directory %s above it is writable by every user", up);
  refused(sock, NULL, log, want);
  ck_assert_int_ne(access(sub, F_OK), 0);
  ck_assert_int_eq(mkdir(sub, 0755), 0);

  ck_assert_int_eq(chmod(up, 01777), 0); /* as /tmp */
  file_write(sock, "not a socket\n");
  refused(sock, NULL, log, "not a socket"); /* the next check: the directories passed */
  ck_assert_int_eq(unlink(sock), 0);
  unlink(link);
  unlink(log);
  rmdir(sub);
  rmdir(up);
  rmdir(dir);
}
END_TEST

/* At its stop coopd unlinked whatever was at the socket's path: after
 * another user had renamed its directory and listened at the path (the
 * test above), the attacker's socket; after a replacement of the file,
 * the replacement. Now it removes the file it bound, where that is now
 * (the directory it holds open), and only if its device and inode are
 * still those it bound. */
START_TEST(stop_removes_only_its_own_socket) {
  char logp[] = "/tmp/coopd-own-XXXXXX.log", moved[80], mine[112];
  log_temp(logp);
  static const char *const sets[] = {"server.journal=off", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  snprintf(moved, sizeof moved, "%s.moved", d.dir);
  snprintf(mine, sizeof mine, "%s/coop.sock", moved);
  ck_assert_int_eq(rename(d.dir, moved), 0);
  ck_assert_int_eq(mkdir(d.dir, 0755), 0);
  int squat = listen_at(d.sock);
  daemon_stop_ok(&d, logp);
  struct conn c;
  ck_assert_msg(conn_open(&c, d.sock) == 0,
                "the socket put in the renamed directory's place is gone");
  conn_close(&c);
  ck_assert_msg(access(mine, F_OK) != 0, "coopd left its own socket in the renamed directory");
  close(squat);
  unlink(d.sock);
  rmdir(d.dir);
  rmdir(moved);

  daemon_start_log(&d, sets); /* the file replaced in place */
  ck_assert_int_eq(unlink(d.sock), 0);
  squat = listen_at(d.sock);
  daemon_stop_ok(&d, logp);
  ck_assert_msg(conn_open(&c, d.sock) == 0, "the socket that replaced coopd's is gone");
  conn_close(&c);
  if (!log_has(logp, "not removed: the file there is not the socket coopd bound")) log_print(logp);
  ck_assert(log_has(logp, "not removed: the file there is not the socket coopd bound"));
  close(squat);
  unlink(d.sock);
  rmdir(d.dir);
  unlink(logp);
}
END_TEST

/* coopd started, and signalled the moment its socket file exists: spun
 * for, not polled, so that the signal comes while coopd is still starting
 * (whatever follows the socket's link: the metrics listener, the devices'
 * threads). The pid, or 0 if coopd exited first. */
static pid_t start_and_signal(struct daemon_proc *d, const char *log, int sig) {
  snprintf(d->dir, sizeof d->dir, "/tmp/coopd-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d->dir));
  snprintf(d->sock, sizeof d->sock, "%s/coop.sock", d->dir);
  d->log = log;
  static const char *const sets[] = {"server.journal=off", NULL};
  const char *argv[32];
  int n = coop_test_coopd_argv(argv, COOPD_PATH, d->sock, KERNEL_DIR, "info");
  argv[n++] = "--set", argv[n++] = sets[0], argv[n] = NULL;
  d->pid = fork();
  ck_assert_int_ge(d->pid, 0);
  if (d->pid == 0) {
    if (!freopen(log, "w", stderr)) _exit(126);
    execv(COOPD_PATH, (char *const *)argv);
    _exit(127);
  }
  int st;
  for (int64_t t0 = now_ms(); access(d->sock, F_OK) != 0;) {
    ck_assert_msg(waitpid(d->pid, &st, WNOHANG) == 0, "coopd exited at start-up");
    ck_assert_msg(now_ms() - t0 < 60000, "no socket within 60 s");
  }
  ck_assert_int_eq(kill(d->pid, sig), 0);
  return d->pid;
}

/* A SIGHUP or SIGTERM from the moment the socket exists: a HUP is a reload
 * once coopd runs, a TERM a clean stop, five times each. Both were the
 * default actions until the handlers, started after the listen, were in:
 * coopd died (status 128 + the signal) and left its socket file. */
START_TEST(signals_while_starting_reload_or_stop_it) {
  for (int i = 0; i < 5; i++) {
    char logp[] = "/tmp/coopd-early-XXXXXX.log";
    log_temp(logp);
    struct daemon_proc d;
    start_and_signal(&d, logp, SIGHUP);
    struct conn c;
    int up = 0, st;
    for (int64_t t0 = now_ms(); !up && now_ms() - t0 < 60000; msleep(5)) {
      ck_assert_msg(waitpid(d.pid, &st, WNOHANG) == 0, "a SIGHUP while starting ended coopd (%d)",
                    WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st));
      up = conn_open(&c, d.sock) == 0;
      close(c.fd);
    }
    ck_assert_msg(up, "coopd did not listen within 60 s");
    daemon_stop_ok(&d, logp);
    unlink(logp);

    char logt[] = "/tmp/coopd-early-XXXXXX.log";
    log_temp(logt);
    start_and_signal(&d, logt, SIGTERM);
    char sock[sizeof d.sock];
    memcpy(sock, d.sock, sizeof sock);
    int rc = daemon_wait(&d, 0);
    if (rc) log_print(logt);
    ck_assert_msg(rc == 0, "a SIGTERM while starting: exit status %d", rc);
    ck_assert(log_has(logt, "SIGTERM: stopping"));
    ck_assert_msg(access(sock, F_OK) != 0, "the socket was left behind");
    unlink(logt);
  }
}
END_TEST

/* STATUS of a job: 0 with its state in *state, or the ERROR code. */
static int status_of(struct conn *c, uint64_t job, uint8_t *state) {
  union coop_msg m;
  memset(&m, 0, sizeof m);
  m.job.job = job;
  uint16_t t = reply(c, send_msg(c, COOP_MSG_STATUS, &m, NULL, 0));
  if (t == COOP_MSG_ERROR) return c->m.error.code;
  ck_assert_uint_eq(t, COOP_MSG_STATUS_REPLY);
  struct coop_wire_status st;
  uint32_t off = 0;
  ck_assert_int_eq(coop_wire_status_next(&c->m.status_reply, &off, &st), 0);
  *state = st.state;
  return 0;
}

static uint64_t render_done(struct conn *c) {
  uint64_t job = render_submit(c, 1);
  ck_assert_msg(job != 0, "render refused: %s", c->m.error.message);
  ck_assert_uint_eq(wait_job(c, job, COOP_WAIT_FOREVER), COOP_MSG_RESULT);
  ck_assert_uint_eq(c->m.result.state, COOP_JOB_DONE);
  return job;
}

/* Row #10: a journal with forged lines. Each bad line is skipped and
 * logged; the good one is kept. It was: N 2^64-1 (or an A whose id
 * strtoull saturated) made the next job id 0. */
START_TEST(forged_journal_lines_are_skipped) {
  char dir[64] = "/tmp/coopd-state-XXXXXX", jobs[128], log[128];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(jobs, sizeof jobs, "%s/coop.sock.jobs", dir);
  snprintf(log, sizeof log, "%s/coopd.log", dir);
  file_write(jobs,
             "coop-journal 1\n"
             "N 18446744073709551615\n"
             "A 0 0 sweep\n"
             "A 99999999999999999999999 0 sweep\n"
             "A 7 0 swe\x1b[2Jep\n"
             "L 12 0 render\n"
             "F\n"
             "A 20 0 sweep extra\n"
             "A -14 0 sweep\n");
  ck_assert_int_eq(chmod(jobs, 0600), 0);
  struct daemon_proc d = {.log = log};
  snprintf(d.dir, sizeof d.dir, "%s", dir);
  snprintf(d.sock, sizeof d.sock, "%s/coop.sock", dir);
  daemon_spawn(&d, NULL);
  struct conn c;
  open_hello(&c, &d);
  uint64_t job = render_done(&c);
  ck_assert_uint_gt(job, 12);         /* after the one good record */
  ck_assert_uint_lt(job, 1ull << 53); /* no forged id moved the ids */
  uint8_t st;
  ck_assert_int_eq(status_of(&c, 12, &st), COOP_ELOST);
  ck_assert_int_eq(status_of(&c, 7, &st), COOP_ENOJOB);
  ck_assert_int_eq(status_of(&c, 20, &st), COOP_ENOJOB);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  ck_assert_msg(log_has(log, "7 malformed records skipped"), "the skipped lines are not logged");
  unlink(log);
  rmdir(dir);
}
END_TEST

/* The socket is bound as PATH.PID, then linked to PATH (server.c). In a
 * sticky directory another user may put a file of theirs at PATH.PID, the
 * pid guessed: coopd, as root, removed it. Now it is left alone and the
 * socket bound at PATH directly; coopd serves as ever. The pid is known
 * here: coopd's process waits for the file before its exec. */
START_TEST(a_squatted_socket_name_is_left_alone) {
  if (geteuid() != 0) return; /* a file of another user's: root makes one */
  char logp[] = "/tmp/coopd-sqs-XXXXXX.log", theirs[192];
  log_temp(logp);
  struct daemon_proc d = {.log = logp};
  snprintf(d.dir, sizeof d.dir, "/tmp/coopd-sqs-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d.dir));
  ck_assert_int_eq(chmod(d.dir, 01777), 0);
  snprintf(d.sock, sizeof d.sock, "%s/coop.sock", d.dir);
  int gate[2];
  ck_assert_int_eq(pipe(gate), 0);
  d.pid = fork();
  ck_assert_int_ge(d.pid, 0);
  if (d.pid == 0) {
    char go;
    close(gate[1]);
    if (read(gate[0], &go, 1) != 1 || !freopen(logp, "w", stderr)) _exit(126);
    execl(COOPD_PATH, COOPD_PATH, "--socket", d.sock, "--kernels", KERNEL_DIR, "--set",
          "server.journal=off", (char *)NULL);
    _exit(127);
  }
  close(gate[0]);
  snprintf(theirs, sizeof theirs, "%s.%ld", d.sock, (long)d.pid);
  file_write(theirs, "theirs\n");
  ck_assert_int_eq(lchown(theirs, 65534, 65534), 0);
  ck_assert_int_eq(write(gate[1], "y", 1), 1);
  close(gate[1]);
  struct conn c;
  int up = 0;
  for (int i = 0; i < 400 && !up; i++) {
    up = conn_open(&c, d.sock) == 0;
    if (!up) msleep(50);
  }
  if (!up) log_print(logp);
  ck_assert_msg(up, "coopd did not listen at %s within 20 s", d.sock);
  hello(&c);
  conn_close(&c);
  file_is(theirs, "theirs\n");
  if (!log_has(logp, "not a socket coopd left: left alone")) log_print(logp);
  ck_assert(log_has(logp, "not a socket coopd left: left alone"));
  daemon_stop_ok(&d, logp);
  ck_assert_int_eq(unlink(theirs), 0);
  rmdir(d.dir);
  unlink(logp);
}
END_TEST

/* The journal beside the socket in a sticky directory that every user may
 * write (/tmp, as in the README's examples). Its rewrite, at start and
 * after every MiB of records, wrote a file of one fixed name, PATH.tmp,
 * and another user who made that name first (a folder: not even root
 * removes one with unlink) stopped every rewrite: coopd ran without a
 * journal. Now the name is mkstemp's: the journal is "ok". And a crash
 * mid-rewrite leaves such a file (PATH.tmp-XXXXXX): the next start
 * removes coopd's own, not another user's, nor another name. */
START_TEST(a_squatted_journal_name_stops_nothing) {
  if (geteuid() != 0) return; /* needs another uid: CI runs as root */
  char dir[64] = "/tmp/coopd-state-XXXXXX", squat[128], ours[128], theirs[128], log[128];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_int_eq(chmod(dir, 01777), 0);
  snprintf(squat, sizeof squat, "%s/coop.sock.jobs.tmp", dir);
  snprintf(ours, sizeof ours, "%s/coop.sock.jobs.tmp-Ab12Cd", dir);
  snprintf(theirs, sizeof theirs, "%s/coop.sock.jobs.tmp-Zz99Zz", dir);
  snprintf(log, sizeof log, "%s/coopd.log", dir);
  pid_t kid = fork();
  ck_assert_int_ge(kid, 0);
  if (kid == 0) {
    if (setgid(65534) || setuid(65534) || mkdir(squat, 0755)) _exit(1);
    int fd = open(theirs, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    _exit(fd < 0 ? 2 : 0);
  }
  int st;
  ck_assert_int_eq(waitpid(kid, &st, 0), kid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nobody's files: status %d", st);
  file_write(ours, "coop-journal 1\n");
  char keep[128]; /* the administrator's: not a rewrite's name */
  snprintf(keep, sizeof keep, "%s/coop.sock.jobs.backup", dir);
  file_write(keep, "coop-journal 1\n");
  struct daemon_proc d = {.log = log};
  snprintf(d.dir, sizeof d.dir, "%s", dir);
  snprintf(d.sock, sizeof d.sock, "%s/coop.sock", dir);
  const char *sets[] = {"log.level=info", NULL};
  daemon_spawn(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  render_done(&c);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  if (!log_has(log, "coop.sock.jobs (ok)")) log_print(log);
  ck_assert_msg(log_has(log, "coop.sock.jobs (ok)"), "the journal is not written");
  ck_assert_int_ne(access(ours, F_OK), 0);
  ck_assert_int_eq(access(theirs, F_OK), 0);
  ck_assert_int_eq(access(keep, F_OK), 0);
  unlink(keep);
  unlink(theirs);
  rmdir(squat);
  unlink(log);
  char jobs[128];
  snprintf(jobs, sizeof jobs, "%s/coop.sock.jobs", dir);
  unlink(jobs);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Fills the file system of dir until it has no byte left. */
static void fill_up(const char *dir) {
  char path[256];
  snprintf(path, sizeof path, "%s/filler", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  setvbuf(f, NULL, _IONBF, 0);
  static char block[4096];
  memset(block, 'x', sizeof block);
  while (fwrite(block, 1, sizeof block, f) == sizeof block) {
  }
  while (fputc('x', f) != EOF) {
  }
  ck_assert_int_eq(errno, ENOSPC);
  fclose(f);
}

/* Until the journal at path holds job id's record of kind (journal.c): A
 * is written as the job is accepted, F just after its RESULT, so a kill
 * right after either may come before the write (an F missing, the job is
 * then reported lost, by design: daemon/sess_jobs.c, session_job_done). */
static void wait_journal_record(const char *path, char kind, uint64_t id) {
  char want[40];
  /* "F id" ends its line; "A id uid kernel" goes on */
  int wl = snprintf(want, sizeof want, "\n%c %llu%c", kind, (unsigned long long)id,
                    kind == 'F' ? '\n' : ' ');
  static char text[2u << 20];
  for (int i = 0; i < 500; i++) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text, f) : 0;
    if (f) fclose(f);
    if (n && memmem(text, n, want, (size_t)wl)) return;
    msleep(10);
  }
  ck_abort_msg("no %c record of job %llu in %s within 5 s", kind, (unsigned long long)id, path);
}

static void wait_journal_finished(const char *path, uint64_t id) {
  wait_journal_record(path, 'F', id);
}

/* Row #11: the journal's file system is full, coopd is killed, restarted
 * while it is still full. It was: coopd refused to start. Now it starts, a
 * job that finished before the kill is not reported lost, the one that ran
 * is, and ids go on. The journal is on a tmpfs of 1 MiB (root only: the
 * test says so and returns otherwise). */
START_TEST(journal_on_a_full_disk) {
  char dir[64] = "/tmp/coopd-state-XXXXXX", fs[128], set[192], log[128];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(fs, sizeof fs, "%s/fs", dir);
  snprintf(log, sizeof log, "%s/coopd.log", dir);
  ck_assert_int_eq(mkdir(fs, 0700), 0);
  if (mount("tmpfs", fs, "tmpfs", 0, "size=1m,mode=0700") != 0) {
    fprintf(stderr, "journal_on_a_full_disk: cannot mount a tmpfs (%s): skipped\n",
            strerror(errno));
    rmdir(fs);
    rmdir(dir);
    return;
  }
  snprintf(set, sizeof set, "server.journal=%s/jobs", fs);
  const char *sets[] = {set, NULL};
  struct daemon_proc d = {.log = log};
  snprintf(d.dir, sizeof d.dir, "%s", dir);
  snprintf(d.sock, sizeof d.sock, "%s/coop.sock", dir);
  daemon_spawn(&d, sets);
  struct conn c;
  open_hello(&c, &d);
  uint32_t w = c.m.welcome.workers;
  uint64_t before = render_done(&c);
  fill_up(fs);
  uint64_t full = render_done(&c); /* finished on a full disk */
  static uint32_t data[256];
  uint64_t ran = 0;
  for (int round = 0; round < 2; round++) {
    if (round == 0) { /* runs when coopd is killed */
      ran = sweep_submit(&c, data, 256, 100000000, w, -1);
      ck_assert_uint_ne(ran, 0);
      wait_running(&c, ran);
      /* its A record, written after ACCEPTED: a kill before the write lands
       * (a loaded machine) left coopd nothing to report lost */
      wait_journal_record(set + strlen("server.journal="), 'A', ran);
    }
    wait_journal_finished(set + strlen("server.journal="), full); /* finished before the kill */
    conn_close(&c);
    kill(d.pid, SIGKILL);
    int st;
    ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
    daemon_spawn(&d, sets); /* still full */
    conn_reconnect(&c, &d);
    uint8_t state;
    ck_assert_int_eq(status_of(&c, ran, &state), COOP_ELOST);
    ck_assert_int_eq(status_of(&c, full, &state), COOP_ENOJOB);
    ck_assert_int_eq(status_of(&c, before, &state), COOP_ENOJOB);
    uint64_t next = render_done(&c); /* killed before the next round: finished, not lost */
    ck_assert_uint_gt(next, ran);
    ck_assert_uint_gt(next, full);
    full = next;
  }
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  ck_assert_int_eq(umount(fs), 0);
  rmdir(fs);
  if (!log_has(log, "compacting")) log_print(log);
  ck_assert_msg(log_has(log, "compacting"), "the log does not say the journal cannot be written");
  unlink(log);
  rmdir(dir);
}
END_TEST

/* Job times: under CPU load a 12 ms job reported total 1093.940 ms
 * inside a 122 ms command, queued showed '-' and medians went negative:
 * the device clock was fitted once, from two pings 50 ms apart, and a
 * loaded start made that fit wrong for good. Here busy processes load
 * every core from before coopd starts (its fit is made under load) to the
 * end, and each of 16 sweeps, a few hundred ms apart, must report times in
 * the order they happened and inside the client's own wall time. */
START_TEST(times_stay_right_under_load) {
  enum { HOGS = 4, JOBS = 16 };
  pid_t hog[HOGS];
  for (int i = 0; i < HOGS; i++) {
    hog[i] = fork();
    ck_assert_int_ge(hog[i], 0);
    if (hog[i] == 0) {
      alarm(120); /* never outlives the test */
      for (volatile unsigned long x = 0;; x++) {
      }
    }
  }
  struct daemon_proc d;
  daemon_start(&d, NULL);
  struct conn c;
  ck_assert_int_eq(conn_open(&c, d.sock), 0);
  hello(&c);
  static uint32_t data[4096];
  int bad = 0;
  for (int i = 0; i < JOBS; i++) {
    msleep(150 + 50 * (i % 4));
    int64_t t0 = coop__now_ns();
    uint64_t job = sweep_submit(&c, data, 4096, 1 + (uint32_t)i % 3, 1, -1);
    ck_assert_uint_gt(job, 0);
    ck_assert_uint_eq(wait_job(&c, job, 60000), COOP_MSG_RESULT);
    int64_t t1 = coop__now_ns();
    ck_assert_uint_eq(c.m.result.state, COOP_JOB_DONE);
    const struct coop_wire_times *t = &c.m.result.t;
    int ok = t0 <= t->submitted && t->submitted <= t->released && t->released <= t->gathered &&
             t->gathered <= t->started && t->started <= t->finished && t->finished <= t1 &&
             t->gather_ns >= 0 && t->exec_ns >= 0 && t->exec_ns <= t->finished - t->submitted &&
             t->gather_ns <= t->finished - t->released;
    if (!ok) {
      fprintf(stderr,
              "job %d: client %lld..%lld; submitted %+lld released %+lld gathered %+lld "
              "started %+lld finished %+lld (ns from the client's send) gather %lld exec %lld\n",
              i, 0ll, (long long)(t1 - t0), (long long)(t->submitted - t0),
              (long long)(t->released - t0), (long long)(t->gathered - t0),
              (long long)(t->started - t0), (long long)(t->finished - t0), (long long)t->gather_ns,
              (long long)t->exec_ns);
      bad++;
    }
  }
  for (int i = 0; i < HOGS; i++) kill(hog[i], SIGKILL), waitpid(hog[i], NULL, 0);
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  ck_assert_msg(bad == 0, "%d of %d jobs reported times out of order or outside the client's", bad,
                JOBS);
}
END_TEST

/* Row #14: a FIFO named *.cl among the kernels, at start and on SIGHUP. It
 * was: the loop thread blocked in fopen. Now it is skipped with a warning,
 * the reload finishes, and the kernels beside it serve. */
START_TEST(fifo_in_the_kernel_directory) {
  char kdir[64] = "/tmp/coopd-kernels-XXXXXX", path[128], set[128], logp[128];
  kernels_dir_make(kdir);
  snprintf(path, sizeof path, "%s/a_fifo.cl", kdir);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  snprintf(set, sizeof set, "kernels.dirs=%s", kdir);
  snprintf(logp, sizeof logp, "%s/coopd.log", kdir);
  const char *sets[] = {set, "log.level=info", NULL};
  struct daemon_proc d = {.log = logp};
  daemon_start_log(&d, sets);
  ck_assert(log_has(logp, "a_fifo.cl is not a regular file: skipped"));
  struct conn c;
  open_hello(&c, &d);
  render_done(&c);
  kill(d.pid, SIGHUP);
  int done = 0;
  for (int i = 0; i < 1200 && !done; i++, msleep(50)) done = log_has(logp, "reload: done");
  if (!done) log_print(logp);
  ck_assert_msg(done, "the reload did not finish");
  render_done(&c); /* and the loop still answers */
  conn_close(&c);
  ck_assert_int_eq(daemon_stop(&d), 0);
  snprintf(path, sizeof path, "%s/a_fifo.cl", kdir);
  unlink(path);
  unlink(logp);
  kernels_dir_remove(kdir);
}
END_TEST

void daemon_state_cases(Suite *s) {
  TCase *t = tcase_create("state");
  tcase_set_timeout(t, 300);
  tcase_add_test(t, unsafe_paths_are_refused);
  tcase_add_test(t, unsafe_ancestors_are_refused);
  tcase_add_test(t, stop_removes_only_its_own_socket);
  tcase_add_test(t, signals_while_starting_reload_or_stop_it);
  tcase_add_test(t, forged_journal_lines_are_skipped);
  tcase_add_test(t, journal_on_a_full_disk);
  tcase_add_test(t, a_squatted_journal_name_stops_nothing);
  tcase_add_test(t, a_squatted_socket_name_is_left_alone);
  tcase_add_test(t, fifo_in_the_kernel_directory);
  tcase_add_test(t, times_stay_right_under_load);
  suite_add_tcase(s, t);
}
