/*
 * game.c: host side of the game-tree work-stealing application (004 Table
 * 1): Connect Four positions reached by random play, the run, and the check
 * against a sequential CPU negamax.
 *
 * Input: in->data = uint64_t pairs (stones of the side to move, all stones)
 * per position, bitboards of 7 bits per column (bit 7 * col + row, row 0 at
 * the bottom, row 6 a sentinel), in->count positions, in->param = search
 * depth. Output: int32_t value of each position for its side to move.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

extern const char coop_app_src_game_cl[];
extern const struct coop_app coop_app_game;

#define NODE_WORDS 8u /* GAME_NODE_WORDS in game.cl */
#define CTL_QUEUES 4u /* GAME_CTL_QUEUES */
#define NONE 0xffffffffu
#define MAX_DEPTH 16u /* GAME_MAX_DEPTH */
#define WIN 100000    /* GAME_WIN */
#define COLS 7
#define ROWS 6

/* The split depth: tree nodes (one task each) down to it, then a search of
 * 2 plies in parallel plus the rest sequentially per thread. */
static uint32_t split_of(uint32_t depth) {
  if (depth <= 4) return 0;
  return depth - 4 < 3 ? depth - 4 : 3;
}

static size_t node_bound(uint32_t count, uint32_t split) {
  size_t per = 0, level = 1;
  for (uint32_t d = 0; d <= split; d++, level *= COLS) per += level;
  return per * count;
}

/* args: mode, nodes (the roots), acc, res (out), ctl (out), items (the
 * roots dealt round-robin), depth, split, nq, qcap, nodecap (game.cl) */
enum { ARG_RES = 3, ARG_CTL = 4 };

static int prepare(const struct coop_app_input *in, const struct coop_app_opts *o,
                   struct coop_app_task *t) {
  uint32_t count = in->count, depth = in->param, split = split_of(depth);
  if (in->kind != COOP_INPUT_GAME || count == 0 || depth > MAX_DEPTH ||
      in->bytes < (size_t)count * 2 * sizeof(uint64_t))
    return COOP_EINVAL;
  uint32_t nq = t->groups;
  size_t nodecap = node_bound(count, split), qcap = 1;
  while (qcap < nodecap) qcap *= 2;
  if (nq == 0 || nodecap > 0xfffffff0u || qcap * nq > 0xffffffffu) return COOP_EINVAL;

  const uint64_t *pos = in->data;
  uint32_t *nodes = coop_app_task_buf(t, COOP_APP_IN, nodecap * NODE_WORDS * 4);
  coop_app_task_scratch(t, nodecap * 2 * 4);
  uint32_t *res = coop_app_task_buf(t, COOP_APP_INOUT, (size_t)count * 4);
  uint32_t *ctl = coop_app_task_buf(t, COOP_APP_INOUT, (CTL_QUEUES + 4 * (size_t)nq) * 4);
  uint32_t *items = coop_app_task_buf(t, COOP_APP_IN, qcap * nq * 4);
  coop_app_task_u32(t, depth);
  coop_app_task_u32(t, split);
  coop_app_task_u32(t, nq);
  coop_app_task_u32(t, (uint32_t)qcap);
  coop_app_task_u32(t, (uint32_t)nodecap);
  if (t->err) return t->err;
  /* the roots, dealt round-robin over the queues */
  for (uint32_t i = 0; i < count; i++) {
    uint32_t *nd = nodes + (size_t)i * NODE_WORDS, q = i % nq;
    nd[0] = (uint32_t)pos[2 * i];
    nd[1] = (uint32_t)(pos[2 * i] >> 32);
    nd[2] = (uint32_t)pos[2 * i + 1];
    nd[3] = (uint32_t)(pos[2 * i + 1] >> 32);
    nd[4] = NONE;
    nd[5] = 0;
    nd[6] = i;
    items[(size_t)q * qcap + ctl[CTL_QUEUES + 4 * q + 2]++] = i;
    res[i] = 0x80000000u; /* not a value any search returns */
  }
  ctl[0] = count; /* nodes used */
  ctl[1] = count; /* tasks outstanding */
  return 0;
}

/* int32_t value[count]; fails if a queue or the node pool overflowed */
static int collect(const struct coop_app_input *in, struct coop_app_task *t, void **out,
                   size_t *bytes) {
  const uint32_t *ctl = t->arg[ARG_CTL].host;
  if (ctl[2] || ctl[1]) {
    fprintf(stderr, "game: overflow flags %#x, %u tasks left\n", ctl[2], ctl[1]);
    return COOP_EFAILED;
  }
  if (!(*out = coop_app_task_take(t, ARG_RES))) return COOP_ENOMEM;
  *bytes = (size_t)in->count * 4;
  return 0;
}

COOP_APP_RUN(run, coop_app_game);

/* ------------------------------------------------------------ reference */

/* written independently of game.cl: cell arrays instead of bit tricks */
static const int weight[ROWS][COLS] = {{3, 4, 5, 7, 5, 4, 3},    {4, 6, 8, 10, 8, 6, 4},
                                       {5, 8, 11, 13, 11, 8, 5}, {5, 8, 11, 13, 11, 8, 5},
                                       {4, 6, 8, 10, 8, 6, 4},   {3, 4, 5, 7, 5, 4, 3}};

struct board {
  signed char cell[COLS][ROWS]; /* 0 empty, 1 or -1: the player's stone */
  int height[COLS], stones;
};

static int has(uint64_t b, int c, int r) { return (int)((b >> (7 * c + r)) & 1); }

/* the side to move plays 1 */
static void to_board(uint64_t cur, uint64_t mask, struct board *bd) {
  memset(bd, 0, sizeof *bd);
  for (int c = 0; c < COLS; c++)
    for (int r = 0; r < ROWS; r++)
      if (has(mask, c, r)) {
        bd->cell[c][r] = has(cur, c, r) ? 1 : -1;
        bd->height[c] = r + 1;
        bd->stones++;
      }
}

static int at(const struct board *bd, int c, int r) {
  return c >= 0 && c < COLS && r >= 0 && r < ROWS ? bd->cell[c][r] : 0;
}

static const int dirs[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};

/* is the stone at (c, r) part of four in a row */
static int line4(const struct board *bd, int c, int r) {
  int who = bd->cell[c][r];
  for (int d = 0; d < 4; d++) {
    int n = 1;
    for (int k = 1; k < 4 && at(bd, c + k * dirs[d][0], r + k * dirs[d][1]) == who; k++) n++;
    for (int k = 1; k < 4 && at(bd, c - k * dirs[d][0], r - k * dirs[d][1]) == who; k++) n++;
    if (n >= 4) return 1;
  }
  return 0;
}

/* does `who` have four in a row anywhere */
static int four(const struct board *bd, int who) {
  for (int c = 0; c < COLS; c++)
    for (int r = 0; r < ROWS; r++)
      if (bd->cell[c][r] == who && line4(bd, c, r)) return 1;
  return 0;
}

/* negamax for `side`, whose opponent just played at (lc, lr) (lc < 0: at
 * the root, where the whole board is looked at) */
static int negamax(struct board *bd, int side, int depth, int lc, int lr) {
  if (lc >= 0 ? line4(bd, lc, lr) : four(bd, -side)) return -(WIN + depth);
  if (bd->stones == COLS * ROWS) return 0;
  if (depth == 0) {
    int s = 0;
    for (int c = 0; c < COLS; c++)
      for (int r = 0; r < ROWS; r++) s += weight[r][c] * bd->cell[c][r];
    return side * s;
  }
  int best = -2147483647;
  for (int c = 0; c < COLS; c++) {
    int r = bd->height[c];
    if (r == ROWS) continue;
    bd->cell[c][r] = (signed char)side;
    bd->height[c]++;
    bd->stones++;
    int v = -negamax(bd, -side, depth - 1, c, r);
    bd->cell[c][r] = 0;
    bd->height[c]--;
    bd->stones--;
    if (v > best) best = v;
  }
  return best;
}

static int check(const struct coop_app_input *in, const void *outp, char *why, size_t len) {
  const int32_t *v = outp;
  const uint64_t *pos = in->data;
  for (uint32_t i = 0; i < in->count; i++) {
    struct board bd;
    to_board(pos[2 * i], pos[2 * i + 1], &bd);
    int want = negamax(&bd, 1, (int)in->param, -1, -1);
    if (v[i] != want) {
      return coop_app_mismatch(why, len, "game: value[%u] = %d, expected %d (depth %u)", i, v[i],
                               want, in->param);
    }
  }
  return 0;
}

/* ------------------------------------------------------------ inputs */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A position after `moves` random legal moves, none of which wins (so the
 * side to move has not lost yet), where the side to move cannot win at once. */
static void random_position(uint64_t *seed, int moves, uint64_t *cur, uint64_t *mask) {
  for (;;) {
    struct board bd;
    memset(&bd, 0, sizeof bd);
    int side = 1, ok = 1;
    for (int m = 0; m < moves && ok; m++) {
      int tries = 0;
      for (;;) {
        int c = (int)(rng_next(seed) % COLS), r = bd.height[c];
        if (r == ROWS) continue;
        bd.cell[c][r] = (signed char)side;
        if (!line4(&bd, c, r)) {
          bd.height[c]++;
          bd.stones++;
          break;
        }
        bd.cell[c][r] = 0;
        if (++tries > 50) {
          ok = 0;
          break;
        }
      }
      side = -side;
    }
    /* and the side to move has no win in one: the search has work to do */
    for (int c = 0; c < COLS && ok; c++) {
      int r = bd.height[c];
      if (r == ROWS) continue;
      bd.cell[c][r] = (signed char)side;
      ok = !line4(&bd, c, r);
      bd.cell[c][r] = 0;
    }
    if (!ok) continue;
    *cur = *mask = 0;
    for (int c = 0; c < COLS; c++)
      for (int r = 0; r < ROWS; r++)
        if (bd.cell[c][r]) {
          *mask |= 1ull << (7 * c + r);
          if (bd.cell[c][r] == side) *cur |= 1ull << (7 * c + r);
        }
    return;
  }
}

static int make_input(unsigned i, unsigned scale, struct coop_app_input *in) {
  if (!in) return 3;
  uint32_t count, depth, lo, hi;
  switch (i) {
    case 0: /* openings and early middle game */
      count = 12, depth = 6, lo = 2, hi = 12;
      break;
    case 1: /* fewer positions, deeper: 400 tasks each */
      count = 6, depth = 7, lo = 4, hi = 14;
      break;
    case 2: /* late middle game: wins and losses inside the horizon */
      count = 24, depth = 6, lo = 14, hi = 22;
      break;
    default:
      return COOP_EINVAL;
  }
  depth += scale > 4 ? 4 : scale;
  memset(in, 0, sizeof *in);
  uint64_t *p = malloc((size_t)count * 2 * sizeof *p), seed = 0x6a3e + 7919ull * i;
  if (!p) return COOP_ENOMEM;
  for (uint32_t k = 0; k < count; k++)
    random_position(&seed, (int)(lo + rng_next(&seed) % (hi - lo + 1)), &p[2 * k], &p[2 * k + 1]);
  snprintf(in->label, sizeof in->label, "connect4-p%u-d%u", count, depth);
  in->kind = COOP_INPUT_GAME;
  in->data = p;
  in->bytes = (size_t)count * 2 * sizeof *p;
  in->count = count;
  in->param = depth;
  return 0;
}

const struct coop_app coop_app_game = {
    .name = "game",
    .kernel = "game",
    .source = coop_app_src_game_cl,
    .truth =
        "004 Sec. 3.2 and Table 1 (game: work stealing, offer_kill + request_fork at the top "
        "of the main loop, nothing transmitted); here a depth-limited Connect Four negamax",
    .input = COOP_INPUT_GAME,
    .run = COOP_APP_RUN_FN(run),
    .check = check,
    .make_input = make_input,
    .prepare = prepare,
    .collect = collect,
    .elem = COOP_APP_ELEM_I32,
    .output = "i32 value[count]: negamax value of each position for its side to move",
    .has_source = 0,
};
