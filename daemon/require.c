/* require.c: see require.h. A rule compiles to a small stack program. */
#include "require.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

enum {
  OP_LIT = 1,
  OP_ARG,
  OP_LEN,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_DIV,
  OP_MOD,
  OP_LE,
  OP_LT,
  OP_GE,
  OP_GT,
  OP_EQ,
  OP_NE
};

struct parser {
  const char *p;
  struct req_rule *r;
  const char (*names)[32];
  const uint8_t *types;
  unsigned nargs;
  char *err;
  size_t errlen;
  int failed;
};

static void fail(struct parser *ps, const char *what) {
  if (!ps->failed) snprintf(ps->err, ps->errlen, "require \"%s\": %s", ps->r->text, what);
  ps->failed = 1;
}

static void emit(struct parser *ps, uint8_t op, uint8_t arg, int64_t v) {
  if (ps->failed) return;
  if (ps->r->n == REQ_MAX_CODE) return fail(ps, "too long");
  ps->r->code[ps->r->n].op = op;
  ps->r->code[ps->r->n].arg = arg;
  ps->r->code[ps->r->n].v = v;
  ps->r->n++;
}

static void skip(struct parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t') ps->p++;
}

/* An identifier at ps->p: its argument index, or -1. */
static int ident(struct parser *ps) {
  const char *s = ps->p;
  if (!(isalpha((unsigned char)*s) || *s == '_')) return -1;
  size_t l = 0;
  while (isalnum((unsigned char)s[l]) || s[l] == '_') l++;
  ps->p += l;
  for (unsigned i = 0; i < ps->nargs; i++)
    if (strlen(ps->names[i]) == l && !strncmp(ps->names[i], s, l)) return (int)i;
  if (l > 3 && !strncmp(s, "arg", 3)) {
    unsigned v = 0;
    for (size_t k = 3; k < l; k++) {
      if (!isdigit((unsigned char)s[k])) return -1;
      v = v * 10 + (unsigned)(s[k] - '0');
      if (v >= ps->nargs) return -1;
    }
    return (int)v;
  }
  return -1;
}

static void sum(struct parser *ps);

/* Whether ps->p is the function len: a ( comes next, or no argument is
 * named len. A scalar named len was read as the function where a blank
 * came after it: "len <= len(a)" was refused ("len needs (NAME)") where
 * "len<=len(a)" was taken. */
static int at_len(const struct parser *ps) {
  const char *q = ps->p;
  if (strncmp(q, "len", 3) || isalnum((unsigned char)q[3]) || q[3] == '_') return 0;
  q += 3;
  while (*q == ' ' || *q == '\t') q++;
  if (*q == '(') return 1;
  for (unsigned i = 0; i < ps->nargs; i++)
    if (!strcmp(ps->names[i], "len")) return 0;
  return 1;
}

static void atom(struct parser *ps) {
  skip(ps);
  if (ps->failed) return;
  if (*ps->p == '(') {
    ps->p++;
    sum(ps);
    skip(ps);
    if (*ps->p != ')') return fail(ps, "missing )");
    ps->p++;
    return;
  }
  if (isdigit((unsigned char)*ps->p)) {
    int64_t v = 0;
    while (isdigit((unsigned char)*ps->p)) {
      if (v > (INT64_MAX - 9) / 10) return fail(ps, "number too large");
      v = v * 10 + (*ps->p++ - '0');
    }
    return emit(ps, OP_LIT, 0, v);
  }
  if (at_len(ps)) {
    ps->p += 3;
    skip(ps);
    if (*ps->p != '(') return fail(ps, "len needs (NAME)");
    ps->p++;
    skip(ps);
    int a = ident(ps);
    if (a < 0 || ps->types[a] != COOP_ARG_BUF) return fail(ps, "len() of something not a buffer");
    skip(ps);
    if (*ps->p != ')') return fail(ps, "missing ) after len(NAME");
    ps->p++;
    return emit(ps, OP_LEN, (uint8_t)a, 0);
  }
  int a = ident(ps);
  if (a < 0) return fail(ps, "unknown name or unexpected character");
  if (ps->types[a] == COOP_ARG_BUF) return fail(ps, "a buffer used as a number (use len())");
  if (ps->types[a] == COOP_ARG_F32 || ps->types[a] == COOP_ARG_F64)
    return fail(ps, "a float argument in a rule");
  emit(ps, OP_ARG, (uint8_t)a, 0);
}

static void prod(struct parser *ps) {
  atom(ps);
  for (;;) {
    skip(ps);
    char c = *ps->p;
    if (c != '*' && c != '/' && c != '%') return;
    ps->p++;
    atom(ps);
    emit(ps, c == '*' ? OP_MUL : c == '/' ? OP_DIV : OP_MOD, 0, 0);
  }
}

static void sum(struct parser *ps) {
  prod(ps);
  for (;;) {
    skip(ps);
    char c = *ps->p;
    if (c != '+' && c != '-') return;
    ps->p++;
    prod(ps);
    emit(ps, c == '+' ? OP_ADD : OP_SUB, 0, 0);
  }
}

int req_compile(struct req_rule *r, const char *text, const char (*names)[32], const uint8_t *types,
                unsigned nargs, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  snprintf(r->text, sizeof r->text, "%s", text);
  if (strlen(text) >= sizeof r->text) return snprintf(err, errlen, "require: rule too long"), -1;
  struct parser ps = {text, r, names, types, nargs, err, errlen, 0};
  sum(&ps);
  skip(&ps);
  static const struct {
    const char *s;
    uint8_t op;
  } cmp[] = {{"<=", OP_LE}, {">=", OP_GE}, {"==", OP_EQ},
             {"!=", OP_NE}, {"<", OP_LT},  {">", OP_GT}};
  uint8_t op = 0;
  for (unsigned i = 0; i < sizeof cmp / sizeof cmp[0] && !ps.failed; i++)
    if (!strncmp(ps.p, cmp[i].s, strlen(cmp[i].s))) {
      op = cmp[i].op;
      ps.p += strlen(cmp[i].s);
      break;
    }
  if (!op) fail(&ps, "needs a comparison (<= < >= > == !=)");
  sum(&ps);
  skip(&ps);
  if (*ps.p) fail(&ps, "unexpected text at the end");
  emit(&ps, op, 0, 0);
  return ps.failed ? -1 : 0;
}

static int64_t scalar(uint8_t type, uint64_t bits, int *bad) {
  switch (type) {
    case COOP_ARG_U32:
      return (int64_t)(uint32_t)bits;
    case COOP_ARG_I32:
      return (int64_t)(int32_t)(uint32_t)bits;
    case COOP_ARG_I64:
      return (int64_t)bits;
    default:
      if (bits > (uint64_t)INT64_MAX) *bad = 1;
      return (int64_t)(bits & (uint64_t)INT64_MAX);
  }
}

static const char *arg_name(const char (*names)[32], unsigned i, char *buf, size_t len) {
  if (names[i][0]) return names[i];
  snprintf(buf, len, "arg%u", i);
  return buf;
}

/* The values a rule reads, "n = 5, len(a) = 64", for its message. */
static void values(const struct req_rule *r, const char (*names)[32], const uint8_t *types,
                   const uint64_t *bits, const uint64_t *lens, char *out, size_t len) {
  size_t at = 0;
  uint32_t seen = 0, seen_len = 0;
  out[0] = '\0';
  for (unsigned i = 0; i < r->n && at < len; i++) {
    unsigned a = r->code[i].arg;
    char nb[16];
    int w = 0;
    if (r->code[i].op == OP_ARG && !(seen & (1u << a))) {
      seen |= 1u << a;
      const char *nm = arg_name(names, a, nb, sizeof nb);
      if (types[a] == COOP_ARG_I32 || types[a] == COOP_ARG_I64)
        w = snprintf(
            out + at, len - at, "%s%s = %" PRId64, at ? ", " : "", nm,
            types[a] == COOP_ARG_I32 ? (int64_t)(int32_t)(uint32_t)bits[a] : (int64_t)bits[a]);
      else
        w = snprintf(out + at, len - at, "%s%s = %" PRIu64, at ? ", " : "", nm,
                     types[a] == COOP_ARG_U32 ? (uint64_t)(uint32_t)bits[a] : bits[a]);
    } else if (r->code[i].op == OP_LEN && !(seen_len & (1u << a))) {
      seen_len |= 1u << a;
      w = snprintf(out + at, len - at, "%slen(%s) = %" PRIu64, at ? ", " : "",
                   arg_name(names, a, nb, sizeof nb), lens[a]);
    }
    if (w > 0) at += (size_t)w;
  }
}

int req_check(const struct req_rule *r, const char (*names)[32], const uint8_t *types,
              const uint64_t *bits, const uint64_t *lens, char *why, size_t whylen) {
  int64_t st[REQ_MAX_CODE];
  unsigned sp = 0;
  int bad = 0; /* overflow, division by zero, out of range */
  for (unsigned i = 0; i < r->n && !bad; i++) {
    int64_t a = sp >= 2 ? st[sp - 2] : 0, b = sp >= 1 ? st[sp - 1] : 0, v = 0;
    uint8_t op = r->code[i].op;
    switch (op) {
      case OP_LIT:
        st[sp++] = r->code[i].v;
        continue;
      case OP_ARG:
        st[sp++] = scalar(types[r->code[i].arg], bits[r->code[i].arg], &bad);
        continue;
      case OP_LEN:
        st[sp++] = lens[r->code[i].arg] > INT64_MAX ? (bad = 1, 0) : (int64_t)lens[r->code[i].arg];
        continue;
      case OP_ADD:
        bad = __builtin_add_overflow(a, b, &v);
        break;
      case OP_SUB:
        bad = __builtin_sub_overflow(a, b, &v);
        break;
      case OP_MUL:
        bad = __builtin_mul_overflow(a, b, &v);
        break;
      case OP_DIV:
      case OP_MOD:
        if (b == 0 || (a == INT64_MIN && b == -1))
          bad = 1;
        else
          v = op == OP_DIV ? a / b : a % b;
        break;
      case OP_LE:
        v = a <= b;
        break;
      case OP_LT:
        v = a < b;
        break;
      case OP_GE:
        v = a >= b;
        break;
      case OP_GT:
        v = a > b;
        break;
      case OP_EQ:
        v = a == b;
        break;
      case OP_NE:
        v = a != b;
        break;
      default:
        bad = 1;
    }
    sp--;
    st[sp - 1] = v;
  }
  if (!bad && sp == 1 && st[0]) return 0;
  char vals[160];
  values(r, names, types, bits, lens, vals, sizeof vals);
  snprintf(why, whylen, "the kernel requires %s%s (%s)", r->text,
           bad ? ", which overflows or divides by zero for these values" : "", vals);
  return -1;
}
