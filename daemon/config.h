/*
 * config.h: coopd's settings, from conf/coopd.ini (inih) then the command
 * line. Every key is documented in conf/coopd.ini itself.
 */
#ifndef COOPD_CONFIG_H
#define COOPD_CONFIG_H

#include <stddef.h>

/* [device] max_registers by default: on an H200 with every shipped kernel
 * the merged megakernel takes 96 registers (2 blocks of 256 an SM); at 80
 * it fits 3 (1.5x the workers) and the applications ran within their
 * run-to-run spread (bench/RESULTS.md, "A register cap"). */
#define CONFIG_MAX_REGISTERS 80u

struct config {
  /* [device] */
  char backend[16];   /* "auto", "opencl" or "cuda" */
  char devices[128];  /* "": one (device_index); "all"; or a list "0,1" */
  char platform[128]; /* substring of the platform name; "" = any */
  char device[128];   /* substring of the device name; "" = any */
  int platform_index, device_index;
  unsigned local_size;     /* 0 = the backend's default */
  unsigned max_workgroups; /* hardware workgroups launched; 0 = the runtime chooses */
  unsigned arena_mb;       /* SVM arena for job buffers */
  unsigned device_mb;      /* CUDA: device memory for device buffers besides it; 0 = none */
  unsigned park_ms;        /* idle this long: the megakernel leaves the device; 0 = never */
  unsigned max_registers;  /* CUDA: NVRTC --maxrregcount; 0 = none, else 16..255 */
  int kernel_widths;       /* each kernel's width measured alone at every build (devproc.c) */
  int idle_spin_us;        /* after a job: how long the device thread and process spin for the
                            * next before they sleep; -1 = the backend's choice (device.c) */
  unsigned warm_early_us;  /* a frame's warm window opens this much earlier (device.c) */
  /* [server] */
  char socket[256];
  char journal[300]; /* "": the socket's path + ".jobs"; "off": none */
  unsigned socket_mode;
  unsigned max_clients;
  unsigned hello_timeout_ms; /* close a connection without HELLO after this; 0 = never */
  /* [kernels] */
  char kernel_dirs[1024]; /* colon-separated */
  int reload_in_place;    /* a reload builds in the running device process (device.h) */
  char authors[1024];     /* who may add kernels (authors.h); "" = nobody */
  char authored_dir[512]; /* where added kernels are kept (kstore.h) */
  unsigned max_kernels_per_author;
  unsigned author_reload_interval_ms; /* an author's reloads, one per this long (kadd.c) */
  unsigned author_build_ms; /* a set with an author's kernel builds within it (reload.c) */
  unsigned long long max_source_bytes; /* of one added kernel */
  /* [limits] */
  unsigned max_jobs_per_client;
  unsigned long long max_bytes_per_client;
  unsigned max_finished_per_client;
  /* per user (uid), over all its connections (docs/daemon.md, "Limits") */
  unsigned max_clients_per_uid;
  unsigned max_jobs_per_uid;            /* queued or running, detached included */
  unsigned long long max_bytes_per_uid; /* in flight, plus the inline results kept */
  unsigned max_detached_kept_per_uid;   /* finished DETACHED jobs whose client has gone */
  unsigned max_detached_kept;           /* the same over every user */
  unsigned max_buffers_per_uid;         /* device buffers, kept ones included */
  unsigned max_buffer_percent_per_uid;  /* of a device's room for them (sess_bufs.c) */
  unsigned max_warm_percent_per_uid;    /* of the time, in its frame loops' warm windows */
  /* job priorities (priority.c): what every uid may ask, and more for some */
  unsigned max_priority;
  char priority_users[1024]; /* "NAME:N", "UID:N", "@GROUP:N", separated by spaces or commas */
  char subordinate_ids[256]; /* /etc/subuid, or off (subids.h) */
  /* [log] */
  int log_level;
  int log_syslog;
  /* [jobs] */
  unsigned watchdog_ms;      /* cancel a job running longer; 0 = never */
  unsigned grace_ms;         /* shutdown: let jobs finish this long, then cancel */
  unsigned gather_budget_ms; /* fail a task waiting longer for workgroups; 0 = never */
  unsigned hang_ms;          /* a cancelled kernel still running after this is hung */
  unsigned task_max_ms;      /* cancel a non-cooperative task running longer; 0 = never */
  unsigned restart_hold_ms;  /* a restart's culprit waits this, doubling (dev_hold.c); 0 = no */
  unsigned checkpoint_ms; /* a cooperative job's state copied out this often (dev_ckpt.c); 0 = no */
  unsigned snapshot_percent; /* of the arena one job's checkpoint snapshot may take; 0 = none */
  unsigned reserve_percent;  /* workers cooperative jobs may not pin (device.c) */
  unsigned tasks_per_uid;    /* a user's non-cooperative jobs a device runs at once (dev_turns.c) */
  unsigned task_percent_per_uid; /* a user's tasks' share of a device's worker time (dev_turns.c) */
  unsigned min_deadline_us;      /* a SUBMIT's shorter deadline is refused; 0 = any */
  unsigned undated_due_ms;       /* a task without a deadline: due after it; 0 = never */
  unsigned max_period_ms;        /* a SUBMIT's longer period is refused; 0 = any */
  unsigned max_series_ms;        /* a periodic series longer than this is refused; 0 = any */
  /* [metrics]: GET /metrics over HTTP (metrics_http.c); off by default */
  char metrics_listen[80];          /* "ADDR:PORT"; "" = off */
  int metrics_allow_remote;         /* a non-loopback ADDR needs this */
  unsigned metrics_max_connections; /* HTTP connections at once; more are closed */
  unsigned metrics_max_per_peer;    /* of them from one address */
  unsigned metrics_timeout_ms;      /* a connection's whole life, request to close */
  unsigned metrics_request_ms;      /* accept to a whole request head */
};

/* Defaults (documented in conf/coopd.ini); the socket from the environment. */
void config_defaults(struct config *c);
/* Reads an ini file over c. Returns 0, or -1 with a message in err. */
int config_load(struct config *c, const char *path, char *err, size_t errlen);
/* The same from ini text in memory (NUL-terminated); name stands for the
 * file in messages. For the config reader's fuzz target (tests/fuzz_config.c),
 * which should not go through the file system. */
int config_load_string(struct config *c, const char *name, const char *text, char *err,
                       size_t errlen);
/* One key by section and name, as the file would set it (flags use it). */
int config_set(struct config *c, const char *section, const char *key, const char *value, char *err,
               size_t errlen);
/* Whether the ini file at path names [section] name: 1 with its text (as
 * written, the last one if repeated) in value, 0 if not, -1 if it cannot
 * be read. For coopd to say that a command-line flag overrides it. */
int config_file_sets(const char *path, const char *section, const char *name, char *value,
                     size_t n);
/* Checks cross-field rules. */
int config_validate(const struct config *c, char *err, size_t errlen);
/* [device] devices as device indices: the count (1..max), 0 for "all"
 * (every usable device of the backend: probe 0, 1, ... until one fails),
 * or -1 if malformed. "" is one device, device_index. */
int config_devices(const struct config *c, int *idx, unsigned max);
struct sockaddr_storage;
/* [metrics] listen as a socket address: 1 when it is off (""), 0 with *ss
 * set, or -1 with a message (malformed, or not loopback without
 * allow_remote). Numeric addresses only (and "localhost"): no resolver at
 * start. */
int config_metrics_addr(const struct config *c, struct sockaddr_storage *ss, char *err,
                        size_t errlen);
void config_print(const struct config *c, void (*line)(const char *));

/* The keys: one row each in config.c's table, which config_set parses by
 * and SIGHUP reloads by (confreload.c). */
struct config_key {
  const char *section, *name;
  int kind;         /* how it parses and shows, and whether it is live (config.c) */
  size_t off, size; /* the field in struct config */
  unsigned long long max;
};
const struct config_key *config_keys(size_t *n);
/* The row of [section] name, or NULL. */
const struct config_key *config_key_find(const char *section, const char *name);
/* 1: SIGHUP applies a change to k at once (only the loop thread reads
 * it); 0: the change waits for a restart. */
int config_key_live(const struct config_key *k);
/* Whether k's value differs between a and b. */
int config_key_differs(const struct config_key *k, const struct config *a, const struct config *b);
/* k's value in c as a log line shows it ("..." around a string). */
void config_key_show(const struct config_key *k, const struct config *c, char *b, size_t n);

#endif /* COOPD_CONFIG_H */
