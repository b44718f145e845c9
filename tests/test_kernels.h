/* test_kernels.h: the sources of the kernels the runtime's tests register
 * in process, one per rule of 004 Sec. 3.1 (the files of kernels/tests/runtime,
 * each saying what it checks, and kernels/demo/stopsweep.cl), embedded by
 * tests/CMakeLists.txt (cmake/embed.cmake). */
#ifndef COOP_TEST_KERNELS_H
#define COOP_TEST_KERNELS_H

extern const char coop_test_src_ids_cl[], coop_test_src_queue_cl[], coop_test_src_sweep_cl[],
    coop_test_src_phases_cl[], coop_test_src_forever_cl[], coop_test_src_viewpoke_cl[],
    coop_test_src_rawpoke_cl[], coop_test_src_count_cl[], coop_test_src_plain_cl[],
    coop_test_src_stopsweep_cl[], coop_test_src_offerspin_cl[], coop_test_src_gate_cl[],
    coop_test_src_cascade_cl[], coop_test_src_longstep_cl[], coop_test_src_tqlook_cl[],
    coop_test_src_kwrun_cl[], coop_test_src_divided_cl[], coop_test_src_scalars_cl[];

/* The names the tests use. */
static const char *const k_ids = coop_test_src_ids_cl;
static const char *const k_queue = coop_test_src_queue_cl;
static const char *const k_sweep = coop_test_src_sweep_cl;
static const char *const k_phases = coop_test_src_phases_cl;
static const char *const k_forever = coop_test_src_forever_cl;
static const char *const k_offerspin = coop_test_src_offerspin_cl;
static const char *const k_gate = coop_test_src_gate_cl;
static const char *const k_cascade = coop_test_src_cascade_cl;
static const char *const k_longstep = coop_test_src_longstep_cl;
static const char *const k_tqlook = coop_test_src_tqlook_cl;
static const char *const k_kwrun = coop_test_src_kwrun_cl;
static const char *const k_divided = coop_test_src_divided_cl;
static const char *const k_viewpoke = coop_test_src_viewpoke_cl;
static const char *const k_rawpoke = coop_test_src_rawpoke_cl;
static const char *const k_scalars = coop_test_src_scalars_cl;
static const char *const coop_stopsweep_src = coop_test_src_stopsweep_cl;

#endif
