/*
 * side_setups.c: the table of coop-bench-side's setups, one file each
 * (side_setup_*.c). The order is the rows' and the CSV's; bench/README.md
 * says what each measures and why it is built as it is.
 */
#include "side_setup.h"

const struct side_setup side_setups[S_COUNT] = {
    [S_ALONE] = {"alone", "(0) matmul alone", "the matmul as a plain CUDA kernel on the idle GPU",
                 SETUP_IDLE_GPU | SETUP_CUDA, NULL, setup_alone_run},
    [S_LONG] = {"long", "long kernel alone", "the long kernel alone, back to back",
                SETUP_LONG | SETUP_NO_GFX, NULL, setup_long_run},
    [S_COOP_ALONE] = {"coop-alone", "(0c) coop task alone",
                      "the matmul as a coop task of K groups, idle megakernel",
                      SETUP_GATHER | SETUP_PER_K, NULL, setup_coop_alone_run},
    [S_PROCESS] = {"process", "(a) separate process",
                   "plain CUDA matmul from a second process: driver time slicing",
                   SETUP_LONG | SETUP_CUDA, setup_slice_prepare, setup_slice_run},
    [S_STREAM] = {"stream", "(b) same process, other stream",
                  "plain CUDA matmul on another stream (default priority) of the long kernel's "
                  "process",
                  SETUP_LONG | SETUP_CUDA, NULL, setup_stream_run},
    [S_COOP] = {"coop", "(c) coop", "a coop task of K groups gathered from the long kernel",
                SETUP_LONG | SETUP_GATHER | SETUP_PER_K, NULL, setup_coop_run},
    [S_PRIO] = {"prio", "(d) same process, highest-priority stream",
                "as (b), on the context's highest-priority stream", SETUP_LONG | SETUP_CUDA, NULL,
                setup_stream_run},
    [S_COOP_ALONE_AHEAD0] = {"coop-alone-ahead0", "(0c) coop task alone, no gathering ahead",
                             "as coop-alone with --ahead 0",
                             SETUP_GATHER | SETUP_PER_K | SETUP_EXTRA, NULL, setup_coop_alone_run},
    [S_COOP_AHEAD0] = {"coop-ahead0", "(c) coop, no gathering ahead", "as coop with --ahead 0",
                       SETUP_LONG | SETUP_GATHER | SETUP_PER_K | SETUP_EXTRA, NULL, setup_coop_run},
    [S_GREEN] = {"green", "(e) green contexts",
                 "the matmul and the long kernel in green contexts of k and the other SMs",
                 SETUP_LONG | SETUP_CUDA | SETUP_PER_K | SETUP_OWN_LONG | SETUP_EXTRA, NULL,
                 setup_green_run},
    [S_GREEN_LONG] = {"green-long", "(e) green: long kernel alone",
                      "green: the long kernel alone on the SMs the matmul leaves",
                      SETUP_LONG | SETUP_NO_GFX | SETUP_PER_K | SETUP_OWN_LONG | SETUP_HIDDEN, NULL,
                      NULL},
    [S_MPS] = {"mps", "(f) MPS, no limits",
               "the long kernel and the matmul as two MPS client processes",
               SETUP_LONG | SETUP_CUDA | SETUP_OWN_LONG | SETUP_EXTRA, NULL, setup_mps_run},
    [S_MPS_SPLIT] = {"mps-90-10", "(f) MPS, 90/10 active threads",
                     "mps with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE 90 (long) and 10 (matmul)",
                     SETUP_LONG | SETUP_CUDA | SETUP_OWN_LONG | SETUP_HIDDEN, NULL, NULL},
    [S_COOPD] = {"coopd", "(g) frame client through coopd",
                 "the matmul from a client of a coopd, its input written and its output read "
                 "through device buffers every frame, beside the long kernel as a coopd job",
                 SETUP_LONG | SETUP_GATHER | SETUP_PER_K | SETUP_OWN_LONG | SETUP_EXTRA, NULL,
                 setup_coopd_run, S_COOPD_ALONE, S_COOPD_LONG},
    [S_COOPD_ALONE] = {"coopd-alone", "(g) coopd: frame client alone",
                       "coopd: the frame client with no other job",
                       SETUP_GATHER | SETUP_PER_K | SETUP_OWN_LONG | SETUP_HIDDEN, NULL, NULL},
    [S_COOPD_LONG] = {"coopd-long", "(g) coopd: long kernel alone",
                      "coopd: the long kernel as coopd jobs, alone",
                      SETUP_LONG | SETUP_NO_GFX | SETUP_OWN_LONG | SETUP_HIDDEN, NULL, NULL},
};

#ifndef COOP_SIDE_COOPD
/* A build without libcoop (COOP_RUNTIME_ONLY) has no client to go through
 * coopd with: side_setup_coopd.c is not in it. */
int setup_coopd_run(struct bench *b, int setup) {
  (void)b;
  say_skip(side_setups[setup].label, "built without libcoop (COOP_RUNTIME_ONLY)");
  return 0;
}
#endif
