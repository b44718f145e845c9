/*
 * test_cuda_build.c: the CUDA backend's build of a megakernel, with the
 * real NVRTC and a stand-in driver (tests/cuda_stub.c: an H200's
 * attributes, no GPU). game's megakernel with the matmul beside it, as
 * coop-bench-side builds it at 64 threads a workgroup: ptxas, uncapped,
 * gives it more registers than 9 blocks an SM allow; the room's cap keeps
 * 8 (docs/kernels.md, "Room for the driver"), and a cap that fits a 9th
 * without a spill exists ("A cap that fits one more block"). The build
 * kept must be that one, and the module loaded must be the build
 * described. Where another NVRTC spills under that cap, the figures below
 * say so in the failure.
 */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "check_run.h"
#include "coop_rt.h"
#include "cubin.h"

extern const struct coop_app coop_app_game;

START_TEST(a_cap_without_spill_fits_another_block) {
  struct coop_rt_options o;
  coop_rt_options_init(&o);
  o.backend = "cuda";
  o.local_size = 64;
  coop_rt *rt = NULL;
  int r = coop_rt_open(&rt, &o);
  ck_assert_msg(r == 0, "open: %s", rt ? coop_rt_errmsg(rt) : "");
  ck_assert_int_ge(coop_rt_add_kernel(rt, coop_app_game.kernel, 1, coop_app_game.source), 0);
  ck_assert_int_ge(coop_matmul_register(rt), 0);
  r = coop_rt_build(rt);
  ck_assert_msg(r == 0, "build: %s", coop_rt_errmsg(rt));
  struct coop_rt_width w;
  char t[256];
  ck_assert_int_eq(coop_rt_kernel_width(rt, -1, &w), 0);
  coop_rt_width_text(&w, t, sizeof t);
  /* 8 blocks an SM: the room's cap alone (120); 9 or more: the cap step */
  ck_assert_msg(w.per_cu >= 9 && w.spill_bytes == 0, "kept: %s", t);
  /* the launch fails on the stub, after loading the module it was built to */
  ck_assert_int_ne(coop_rt_launch(rt), 0);
  /* the launch line says what the cap step did */
  const char *note = coop_rt_backend_note(rt);
  ck_assert_msg(strstr(note, "built under ") && strstr(note, " registers ("), "note: %s", note);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(h);
  const void *(*image)(size_t *) = (const void *(*)(size_t *))dlsym(h, "coop_stub_last_image");
  ck_assert_ptr_nonnull(image);
  size_t len = 0;
  const void *cubin = image(&len);
  struct coop__cubin_figures f;
  ck_assert_int_eq(coop__cubin_figures(cubin, len, "coop_megakernel", &f), 0);
  ck_assert_msg(f.regs == w.regs, "loaded %d registers, kept %s", f.regs, t);
  dlclose(h);
  coop_rt_close(rt);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cuda_build");
  TCase *c = tcase_create("cap");
  tcase_set_timeout(c, 120);
  tcase_add_test(c, a_cap_without_spill_fits_another_block);
  suite_add_tcase(s, c);
  return s;
}

int main(void) { return coop_test_run(srunner_create(suite())); }
