//@needs api.h barrier.cl taskqueue.cl
/*
 * registered.cl: the place of the registered kernels in the assembled
 * source. source.c puts them here, after everything a kernel may call
 * (api.h, primitives.cl, barrier.cl, taskqueue.cl), each followed by its
 * runner, then the glue that names them (COOP_NKERNELS,
 * coop__kernel_is_coop, coop__dispatch), which the scheduler and the
 * workers call.
 */
