/*
 * layout.c: the layouts of libcoop's structs as client/coop.h defines them,
 * one line each: "STRUCT size N" and "STRUCT.FIELD OFFSET", and the limits
 * of coop_limits.h that python/coop/_capi.py restates, "NAME VALUE".
 * test_layout.py compares them with _capi.py's ctypes declarations and
 * constants.
 */
#include <stddef.h>
#include <stdio.h>

#include "coop.h"

#define S(s) printf("coop_%s size %zu\n", #s, sizeof(struct coop_##s))
#define F(s, f) printf("coop_%s.%s %zu\n", #s, #f, offsetof(struct coop_##s, f))
#define L(n) printf("%s %d\n", #n, (int)(n))

int main(void) {
  S(info);
  F(info, version), F(info, daemon_version), F(info, backend), F(info, device);
  F(info, compute_units), F(info, workers), F(info, max_payload), F(info, inline_max);
  F(info, uid), F(info, pid), F(info, ndevices);
  S(times);
  F(times, submitted), F(times, released), F(times, gathered), F(times, started);
  F(times, finished), F(times, gather_ns), F(times, exec_ns);
  S(instance);
  F(instance, state), F(instance, t);
  S(result);
  F(result, job), F(result, state), F(result, device), F(result, error), F(result, message);
  F(result, t), F(result, m_initial), F(result, m_min), F(result, m_max), F(result, kills);
  F(result, forks), F(result, resizes), F(result, instances), F(result, misses);
  F(result, ninst), F(result, inst);
  S(device);
  F(device, device), F(device, backend), F(device, compute_units), F(device, workers);
  F(device, lost_workers), F(device, jobs), F(device, parked), F(device, parks);
  F(device, unpark_ns);
  S(stats);
  F(stats, backend), F(stats, device), F(stats, compute_units), F(stats, workers);
  F(stats, clients), F(stats, queued), F(stats, running), F(stats, submitted), F(stats, done);
  F(stats, cancelled), F(stats, refused), F(stats, failed), F(stats, samples);
  F(stats, gather_p50), F(stats, gather_p90), F(stats, gather_p99), F(stats, gather_max);
  F(stats, backend_note), F(stats, gather_timeouts), F(stats, hung), F(stats, lost_workers);
  F(stats, watchdog), F(stats, ndevices), F(stats, devs);
  S(kernel);
  F(kernel, name), F(kernel, cooperative), F(kernel, nargs), F(kernel, types);
  S(kernel_info);
  F(kernel_info, k), F(kernel_info, owner), F(kernel_info, argnames), F(kernel_info, nrules);
  F(kernel_info, rules);
  S(kernel_elems);
  F(kernel_elems, name), F(kernel_elems, nargs), F(kernel_elems, elems);
  S(job_status);
  F(job_status, job), F(job_status, state), F(job_status, cooperative);
  F(job_status, query_barrier), F(job_status, kernel), F(job_status, groups), F(job_status, uid);
  F(job_status, pid), F(job_status, instances_done), F(job_status, misses);
  F(job_status, priority), F(job_status, suspended), F(job_status, device);
  S(wg);
  F(wg, state), F(wg, job);
  S(topjob);
  F(topjob, job), F(topjob, kernel), F(topjob, cooperative), F(topjob, groups), F(topjob, m);
  F(topjob, workers), F(topjob, kills), F(topjob, forks), F(topjob, priority);
  S(event);
  F(event, job), F(event, kind), F(event, state), F(event, instance), F(event, t_ns);
  F(event, gather_ns);
  L(COOP_NAME_MAX), L(COOP_TEXT_MAX), L(COOP_MAX_ARGS), L(COOP_MAX_DEVICES);
  L(COOP_PRIORITY_MIN), L(COOP_PRIORITY_MAX);
  return 0;
}
