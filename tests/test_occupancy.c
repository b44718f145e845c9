/*
 * test_occupancy.c: the CUDA launch's arithmetic (megakernel/occupancy.h)
 * on an H200's SM (65536 registers in 4 sub-partitions, 2048 threads, 32
 * blocks, 228 KiB of shared memory, 1 KiB a block for the system; 132
 * SMs): the blocks each
 * resource allows, the bound named, the launch one block short on every
 * SM where the megakernel would fill the SMs, and the register cap that
 * keeps the blocks and leaves the room instead (an arena copy into managed
 * memory never returned without room: docs/kernels.md, "The megakernel's
 * width"). And
 * the figures read from a cubin (megakernel/cubin.h) when ptxas's log has
 * none, on a small ELF built here with a cubin's sections.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "coop_rt.h"
#include "cubin.h"
#include "occupancy.h"

static const struct coop__sm h200 = {.regfile = 65536,
                                     .threads = 2048,
                                     .blocks = 32,
                                     .shared = 233472,
                                     .block_sys = 1024,
                                     .parts = 4};
enum { SMS = 132 };

static unsigned launch(int regs, int smem, unsigned local_size, struct coop__occ *o) {
  coop__occupancy(&h200, local_size, regs, smem, o);
  return coop__launch_groups(o, o->lim, SMS);
}

/* Every SM's registers taken: one block fewer on every SM, not one in
 * all (7 x 132 + 1 blocks of 64 threads at 128 registers, one SM full,
 * hung an arena copy on an H200). */
START_TEST(full_register_file_leaves_room_on_every_sm) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(64, 4144, 256, &o), 3 * SMS);
  ck_assert_uint_eq(o.lim, 4);
  ck_assert_str_eq(o.bound, "registers");
  ck_assert_int_eq(o.full, 1);
  /* 60 registers round up to 64 in a warp's allocation (units of 256): full too */
  ck_assert_uint_eq(launch(60, 4144, 256, &o), 3 * SMS);
  /* 56 do not (7 x 256 a warp): 8192 registers left, room */
  ck_assert_uint_eq(launch(56, 4144, 256, &o), 528);
  /* 8 blocks of 64 threads at 127 (128) registers */
  ck_assert_uint_eq(launch(127, 4688, 64, &o), 7 * SMS);
  ck_assert_int_eq(o.full, 1);
}
END_TEST

/* The cap that keeps lim blocks (or more) with room: 120 registers for 8 blocks of
 * 64 threads (4096 left on each SM, what returned on an H200), 56 for 4
 * of 256; none where the SM is not full, where registers are not the
 * bound, or where it would take more than a quarter of them. */
START_TEST(room_cap_keeps_the_blocks) {
  struct coop__occ o;
  ck_assert_uint_eq(coop__room_cap(&h200, 64, 127, 4688), 120);
  ck_assert_uint_eq(launch(120, 4688, 64, &o), 8 * SMS);
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(coop__room_cap(&h200, 256, 64, 4144), 56);
  ck_assert_uint_eq(launch(56, 4144, 256, &o), 4 * SMS);
  ck_assert_uint_eq(coop__room_cap(&h200, 256, 128, 0), 120);
  /* 9 blocks of 128 threads at 56 registers fill the SM; at 48, 10 fit
   * with 4096 left: more blocks, and room */
  ck_assert_uint_eq(coop__room_cap(&h200, 128, 56, 4144), 48);
  ck_assert_uint_eq(launch(48, 4144, 128, &o), 10 * SMS);
  ck_assert_int_eq(o.full, 0);
  /* 14 blocks of 64 threads at 72 registers: every cap down to 56 fills
   * the SM again (16, 18 blocks), and 48 is too far below */
  ck_assert_uint_eq(coop__room_cap(&h200, 64, 72, 4688), 0);
  ck_assert_uint_eq(coop__room_cap(&h200, 256, 80, 4144), 0); /* 4096 left: room */
  ck_assert_uint_eq(coop__room_cap(&h200, 1024, 16, 0), 0);   /* threads bound */
  ck_assert_uint_eq(coop__room_cap(&h200, 256, 32, 0), 0);    /* 8 x 256 threads first */
  ck_assert_uint_eq(coop__room_cap(&h200, 32, 64, 0), 0);     /* block slots bound */
  ck_assert_uint_eq(coop__room_cap(&h200, 512, 32, 0), 0);    /* threads and registers */
}
END_TEST

/* The cap that fits one block more an SM with the room: 96 for 64
 * threads at 127 registers or at the room's 120 (8 blocks; at 96 five
 * warps of 3072 on each sub-partition, 10 blocks, 1024 registers left on
 * each), 80 at 96 (10 -> 12); none where registers are not the bound or
 * only a cap below three quarters of them would do. */
START_TEST(more_cap_fits_another_block) {
  struct coop__occ o;
  ck_assert_uint_eq(coop__more_cap(&h200, 64, 127, 4688), 96);
  ck_assert_uint_eq(coop__more_cap(&h200, 64, 120, 4688), 96);
  ck_assert_uint_eq(launch(96, 4688, 64, &o), 10 * SMS);
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(coop__more_cap(&h200, 64, 96, 4688), 80);
  ck_assert_uint_eq(launch(80, 4688, 64, &o), 12 * SMS);
  ck_assert_int_eq(o.full, 0);
  /* 80 registers (12 blocks): 13 need 7 warps on a sub-partition with
   * the room, 56 registers or fewer, below three quarters of 80 */
  ck_assert_uint_eq(coop__more_cap(&h200, 64, 80, 4688), 0);
  ck_assert_uint_eq(coop__more_cap(&h200, 1024, 16, 0), 0); /* threads bound */
  ck_assert_uint_eq(coop__more_cap(&h200, 32, 64, 0), 0);   /* block slots bound */
  ck_assert_uint_eq(coop__more_cap(&h200, 64, 0, 0), 0);    /* no figure */
  /* 1 block of 1024 threads at 64 registers: 2 would need 32 */
  ck_assert_uint_eq(coop__more_cap(&h200, 1024, 64, 0), 0);
}
END_TEST

/* Registers come from each sub-partition's quarter of the file, as whole
 * warps: 64 threads at 104 registers (3328 a warp) fit 4 warps on each,
 * 8 blocks, where the SM's 65536 as one pool would hold 9 (19 warps); the
 * H200 launched 8. With 5632 registers left in the pool but 3072 on each
 * sub-partition, that build is not full; an uneven count of warps leaves
 * the busiest sub-partition with less: 7 blocks of 2 warps at 120. */
START_TEST(registers_per_sub_partition) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(104, 4688, 64, &o), 8 * SMS);
  ck_assert_uint_eq(o.regs, 8);
  ck_assert_str_eq(o.bound, "registers");
  ck_assert_int_eq(o.full, 0);
  /* 3 warps a block at 72 registers (2304): 7 on each sub-partition, 28
   * warps, 9 blocks, where the pool would give 9 too (27.6 warps) */
  coop__occupancy(&h200, 96, 72, 0, &o);
  ck_assert_uint_eq(o.regs, 9);
  /* 27 warps of 9 blocks: 7 on the busiest, 256 registers left there */
  ck_assert_int_eq(o.full, 1);
  /* 5 blocks of 3 warps at 120 registers (3840): 15 warps, 4 on the
   * busiest, 1024 left there: room */
  coop__occupancy(&h200, 96, 120, 0, &o);
  ck_assert_uint_eq(o.regs, 5);
  ck_assert_int_eq(o.full, 0);
}
END_TEST

/* Room left (4096 registers or more): the whole bound, as before. */
START_TEST(room_left_launches_the_bound) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(96, 4144, 256, &o), 264);
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(launch(80, 4144, 256, &o), 396);
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(launch(40, 16, 256, &o), 792);
  ck_assert_uint_eq(o.lim, 6);
}
END_TEST

/* Threads or block slots as the bound: full when they are all taken. */
START_TEST(threads_and_blocks_bound) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(16, 0, 1024, &o), 1 * SMS); /* 2 x 1024 threads */
  ck_assert_str_eq(o.bound, "threads per SM");
  ck_assert_uint_eq(launch(16, 0, 32, &o), 31 * SMS); /* 32 blocks of a warp */
  ck_assert_str_eq(o.bound, "blocks per SM");
  ck_assert_uint_eq(launch(32, 0, 512, &o), 3 * SMS); /* 4 x 512 threads: full */
  /* one block of 2048 threads' worth would fill an SM: one SM short */
  coop__occupancy(&h200, 1024, 64, 0, &o);
  ck_assert_uint_eq(o.lim, 1);
  ck_assert_uint_eq(coop__launch_groups(&o, 1, SMS), SMS - 1);
}
END_TEST

/* Shared memory as the bound, with room and without. */
START_TEST(shared_memory_bound) {
  struct coop__occ o;
  ck_assert_uint_eq(launch(32, 100 * 1024, 256, &o), 2 * SMS); /* 26 KiB left */
  ck_assert_str_eq(o.bound, "shared memory");
  ck_assert_int_eq(o.full, 0);
  ck_assert_uint_eq(launch(32, 113 * 1024, 256, &o), 1 * SMS); /* 0 B left */
  ck_assert_int_eq(o.full, 1);
}
END_TEST

/* A launch below the bound (the occupancy API said fewer) keeps its count. */
START_TEST(below_the_bound_untouched) {
  struct coop__occ o;
  coop__occupancy(&h200, 256, 64, 4144, &o);
  ck_assert_uint_eq(coop__launch_groups(&o, 3, SMS), 3 * SMS);
}
END_TEST

/* ---- a cubin's figures (cubin.h) ---- */

struct blob {
  unsigned char b[2048];
  size_t n;
};

static void put(unsigned char *p, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static size_t add(struct blob *x, const void *p, size_t n) {
  size_t at = (x->n + 7) & ~(size_t)7;
  memcpy(x->b + at, p, n);
  x->n = at + n;
  return at;
}

/* An ELF64 with a cubin's sections: .shstrtab, .strtab, .symtab (null,
 * "other", coop_megakernel), .nv.info (with_info: an HVAL entry, then
 * REGCOUNT 99 of "other", REGCOUNT 48 and FRAME_SIZE 80 of
 * coop_megakernel), .text.coop_megakernel (sh_info: 52 registers << 24),
 * .nv.shared.coop_megakernel (NOBITS, 4144 bytes). */
static void cubin(struct blob *x, int with_info) {
  static const char shstr[] =
      "\0.shstrtab\0.strtab\0.symtab\0.nv.info\0.text.coop_megakernel\0"
      ".nv.shared.coop_megakernel";
  static const char str[] = "\0other\0coop_megakernel";
  unsigned char sym[72] = {0}, info[4 + 3 * 12], text[16] = {0};
  put(sym + 24, 1, 4);
  put(sym + 48, 7, 4);
  unsigned char *e = info;
  e[0] = COOP_EIFMT_HVAL, e[1] = 0x1b, put(e + 2, 0x100, 2), e += 4;
  unsigned vals[3][3] = {{COOP_EIATTR_REGCOUNT, 1, 99},
                         {COOP_EIATTR_REGCOUNT, 2, 48},
                         {COOP_EIATTR_FRAME_SIZE, 2, 80}};
  for (int i = 0; i < 3; i++, e += 12) {
    e[0] = COOP_EIFMT_SVAL, e[1] = (unsigned char)vals[i][0], put(e + 2, 8, 2);
    put(e + 4, vals[i][1], 4), put(e + 8, vals[i][2], 4);
  }
  memset(x, 0, sizeof *x);
  x->n = 64;
  size_t o_shstr = add(x, shstr, sizeof shstr), o_str = add(x, str, sizeof str);
  size_t o_sym = add(x, sym, sizeof sym), o_info = add(x, info, with_info ? sizeof info : 4);
  size_t o_text = add(x, text, sizeof text);
  /* name, type, offset, size, link, info of sections 1..6 (0 is null) */
  uint64_t sh[7][6] = {{0},
                       {1, 3, o_shstr, sizeof shstr, 0, 0},
                       {11, 3, o_str, sizeof str, 0, 0},
                       {19, 2, o_sym, sizeof sym, 2, 0},
                       {27, 0x70000000, o_info, with_info ? sizeof info : 4, 0, 0},
                       {36, 1, o_text, sizeof text, 0, (52u << 24) | 2},
                       {58, 8, 0, 4144, 0, 0}};
  size_t shoff = (x->n + 7) & ~(size_t)7;
  for (int i = 0; i < 7; i++) {
    unsigned char *h = x->b + shoff + 64 * i;
    memset(h, 0, 64);
    put(h, sh[i][0], 4), put(h + 4, sh[i][1], 4), put(h + 24, sh[i][2], 8);
    put(h + 32, sh[i][3], 8), put(h + 40, sh[i][4], 4), put(h + 44, sh[i][5], 4);
  }
  x->n = shoff + 64 * 7;
  memcpy(x->b, "\177ELF\2\1\1", 7);
  put(x->b + 0x28, shoff, 8), put(x->b + 0x3a, 64, 2), put(x->b + 0x3c, 7, 2);
  put(x->b + 0x3e, 1, 2);
}

/* NVRTC's cached builds print no ptxas report: a build under the register
 * cap was taken for want of figures (80 registers, 3 blocks an SM, where
 * the uncapped one fitted 5). They come from the cubin: .nv.info first. */
START_TEST(cubin_figures_from_nv_info) {
  struct blob x;
  cubin(&x, 1);
  struct coop__cubin_figures f;
  ck_assert_int_eq(coop__cubin_figures(x.b, x.n, "coop_megakernel", &f), 0);
  ck_assert_int_eq(f.regs, 48); /* its own entry, not "other"'s 99 nor sh_info's 52 */
  ck_assert_int_eq(f.frame_bytes, 80);
  ck_assert_int_eq(f.shared_bytes, 4144);
  ck_assert_int_eq(coop__cubin_figures(x.b, x.n, "other", &f), 0);
  ck_assert_int_eq(f.regs, 99);
  ck_assert_int_eq(f.shared_bytes, 0); /* no .nv.shared.other */
  ck_assert_int_eq(coop__cubin_figures(x.b, x.n, "missing", &f), COOP_EINVAL);
  ck_assert_int_eq(f.regs, -1);
}
END_TEST

/* Without a REGCOUNT entry, the .text section's sh_info holds the count. */
START_TEST(cubin_registers_from_the_text_section) {
  struct blob x;
  cubin(&x, 0);
  struct coop__cubin_figures f;
  ck_assert_int_eq(coop__cubin_figures(x.b, x.n, "coop_megakernel", &f), 0);
  ck_assert_int_eq(f.regs, 52);
  ck_assert_int_eq(f.frame_bytes, -1);
  ck_assert_int_eq(f.shared_bytes, 4144);
}
END_TEST

/* Every prefix of the file and every byte changed: an answer or EINVAL,
 * never a read outside the buffer (which ASan or valgrind would name). */
START_TEST(cubin_cut_or_damaged) {
  struct blob x;
  cubin(&x, 1);
  struct coop__cubin_figures f;
  for (size_t n = 0; n < x.n; n++) {
    unsigned char *cut = malloc(n ? n : 1);
    memcpy(cut, x.b, n);
    int r = coop__cubin_figures(cut, n, "coop_megakernel", &f);
    ck_assert(r == 0 || r == COOP_EINVAL);
    free(cut);
  }
  for (size_t i = 0; i < x.n; i++) {
    struct blob y = x;
    y.b[i] ^= 0xff;
    int r = coop__cubin_figures(y.b, y.n, "coop_megakernel", &f);
    ck_assert(r == 0 || r == COOP_EINVAL);
  }
  ck_assert_int_eq(coop__cubin_figures("not an elf", 10, "coop_megakernel", &f), COOP_EINVAL);
  ck_assert_int_eq(coop__cubin_figures(NULL, 0, "coop_megakernel", &f), COOP_EINVAL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("occupancy");
  TCase *t = tcase_create("occupancy");
  tcase_add_test(t, full_register_file_leaves_room_on_every_sm);
  tcase_add_test(t, room_cap_keeps_the_blocks);
  tcase_add_test(t, more_cap_fits_another_block);
  tcase_add_test(t, registers_per_sub_partition);
  tcase_add_test(t, room_left_launches_the_bound);
  tcase_add_test(t, threads_and_blocks_bound);
  tcase_add_test(t, shared_memory_bound);
  tcase_add_test(t, below_the_bound_untouched);
  tcase_add_test(t, cubin_figures_from_nv_info);
  tcase_add_test(t, cubin_registers_from_the_text_section);
  tcase_add_test(t, cubin_cut_or_damaged);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return coop_test_run(srunner_create(suite())); }
