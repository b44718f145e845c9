/*
 * cuda_io.c: see cuda_io.h.
 *
 * The legacy stream takes every task's copies in and then its
 * publication (the ring head written with cuStreamWriteValue32, which
 * fences the copies before it); the megakernel's stream is non-blocking,
 * so it never waits for the megakernel. (It was also the stream of the
 * arena's other copies, so that a warm-up before a frame warmed this path;
 * those now go on copy lanes, cuda.c's lane_copy, and the warm-up on lane
 * 0.) CU_IO_OUTS non-blocking streams, taken
 * in turn, each a task's wait for its final state (cuStreamWaitValue32,
 * GEQ: every final state is at least COOP_TS_DONE), its copies out, then
 * its flag. The legacy stream never waits for a task, so a task's
 * publication never waits for another's end; a task's copies out may
 * wait behind another's on the same out-stream (CU_IO_OUTS of them).
 *
 * Where the stream memory operations fail (tried once on a pinned word)
 * or a range's host memory is not page-locked (a pageable copy would
 * block this thread, and its copy out until the task's end), queue_io
 * answers 1 and the runtime copies on the host.
 */
#include "cuda_io.h"

#include <stdlib.h>

#include "rt_internal.h"

#define CU_IO_OUTS 4

struct cu_io {
  CUstream in; /* the legacy stream (0) */
  CUstream out[CU_IO_OUTS];
  unsigned next_out;
  int works;  /* 1: the probe passed; -1: it failed, queue_io answers 1 */
  void *word; /* the probe's, freed at close: freeing page-locked memory
               * waits for the device, and the megakernel never ends */
};

static int io_fail(struct coop_rt *rt, CUresult e, const char *what) {
  const char *s = NULL;
  if (coop__cu.cuGetErrorString) coop__cu.cuGetErrorString(e, &s);
  coop__rt_msg(rt, "%s failed: CUDA error %d (%s)", what, (int)e, s ? s : "?");
  return e == CUDA_ERROR_OUT_OF_MEMORY ? COOP_ENOMEM : COOP_ECL;
}

/* A write of a pinned word on the in-stream, then a wait for it, both
 * done: whether this driver and device take stream memory operations. */
static int probe(struct cu_io *io) {
  void *w = NULL;
  if (coop__cu.cuMemHostAlloc(&w, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
      CUDA_SUCCESS)
    return 0;
  io->word = w;
  volatile uint32_t *v = w;
  *v = 0;
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)w;
  int ok =
      coop__cu.cuStreamWriteValue32(io->in, d, 7, CU_STREAM_WRITE_VALUE_DEFAULT) == CUDA_SUCCESS &&
      coop__cu.cuStreamWaitValue32(io->in, d, 7, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS &&
      coop__cu.cuStreamSynchronize(io->in) == CUDA_SUCCESS && *v == 7;
  return ok;
}

static struct cu_io *make(void) {
  struct cu_io *io = calloc(1, sizeof *io);
  if (!io) return NULL;
  io->works = -1;
  if (!coop__cuda_io()) return io;
  for (unsigned i = 0; i < CU_IO_OUTS; i++)
    if (coop__cu.cuStreamCreate(&io->out[i], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return io;
  io->works = probe(io) ? 1 : -1;
  return io;
}

/* Page-locked host memory, the whole range: the copy engine's at once. */
static int pinned(const void *p, size_t n) {
  const uint8_t *a = p, *b = a + (n ? n - 1 : 0);
  unsigned ta = 0, tb = 0;
  return coop__cu.cuPointerGetAttribute(&ta, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        (CUdeviceptr)(uintptr_t)a) == CUDA_SUCCESS &&
         coop__cu.cuPointerGetAttribute(&tb, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        (CUdeviceptr)(uintptr_t)b) == CUDA_SUCCESS &&
         ta == CU_MEMORYTYPE_HOST && tb == CU_MEMORYTYPE_HOST;
}

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

int coop__cu_queue_io(struct coop_rt *rt, struct cu_io **iop, const struct coop__io_plan *p) {
  if (!*iop && !(*iop = make())) return COOP_ENOMEM;
  struct cu_io *io = *iop;
  if (io->works < 0) return 1;
  for (unsigned i = 0; i < p->nin; i++)
    if (p->in[i].bytes && !pinned(p->in[i].host, p->in[i].bytes)) return 1;
  for (unsigned i = 0; i < p->nout; i++)
    if (p->out[i].bytes && !pinned(p->out[i].host, p->out[i].bytes)) return 1;
  CUresult e = CUDA_SUCCESS;
  for (unsigned i = 0; i < p->nin && e == CUDA_SUCCESS; i++)
    if (p->in[i].bytes)
      e = coop__cu.cuMemcpyHtoDAsync(dptr(p->in[i].arena), p->in[i].host, p->in[i].bytes, io->in);
  if (e != CUDA_SUCCESS) return io_fail(rt, e, "a task's copy in (cuMemcpyHtoDAsync)");
  /* the end's part first: queued before the task can be published */
  CUstream out = io->out[io->next_out++ % CU_IO_OUTS];
  e = coop__cu.cuStreamWaitValue32(out, dptr(p->state), p->final, CU_STREAM_WAIT_VALUE_GEQ);
  for (unsigned i = 0; i < p->nout && e == CUDA_SUCCESS; i++)
    if (p->out[i].bytes)
      e = coop__cu.cuMemcpyDtoHAsync(p->out[i].host, dptr(p->out[i].arena), p->out[i].bytes, out);
  if (e == CUDA_SUCCESS)
    e = coop__cu.cuStreamWriteValue32(out, dptr(p->flag), p->flag_val,
                                      CU_STREAM_WRITE_VALUE_DEFAULT);
  if (e != CUDA_SUCCESS) return io_fail(rt, e, "a task's wait and copies out");
  e = coop__cu.cuStreamWriteValue32(io->in, dptr(p->pub), p->pub_val,
                                    CU_STREAM_WRITE_VALUE_DEFAULT);
  if (e != CUDA_SUCCESS) return io_fail(rt, e, "a task's publication (cuStreamWriteValue32)");
  return 0;
}

void coop__cu_io_drain(struct cu_io **iop, int done) {
  struct cu_io *io = *iop;
  if (!io) return;
  coop__cu.cuStreamSynchronize(io->in);
  for (unsigned i = 0; i < CU_IO_OUTS; i++)
    if (io->out[i]) coop__cu.cuStreamSynchronize(io->out[i]);
  if (!done) return;
  for (unsigned i = 0; i < CU_IO_OUTS; i++)
    if (io->out[i]) coop__cu.cuStreamDestroy(io->out[i]);
  if (io->word) coop__cu.cuMemFreeHost(io->word);
  free(io);
  *iop = NULL;
}
