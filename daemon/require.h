/*
 * require.h: a kernel's admission rules, the `//@coop require` lines.
 *
 *   //@coop require n*n*4 <= len(a)
 *
 * relates the kernel's scalar arguments (by name, or argN) to the byte
 * lengths of its buffer arguments (len(NAME)). coopd compiles every rule
 * when it loads the kernel and checks each SUBMIT against them before a job
 * exists: a client's scalars never reach a kernel that would index past
 * its buffers with them. Grammar (integers only, no floats):
 *   rule := sum OP sum          OP: <= < >= > == !=
 *   sum  := prod (('+'|'-') prod)*
 *   prod := atom (('*'|'/'|'%') atom)*
 *   atom := NUMBER | NAME | len(NAME) | '(' sum ')'
 * Evaluation is in signed 64 bits; an overflow, a division by zero or a u64
 * scalar above 2^63 - 1 makes the rule fail (the client is told which).
 */
#ifndef COOPD_REQUIRE_H
#define COOPD_REQUIRE_H

#include <stddef.h>
#include <stdint.h>

#define REQ_MAX_CODE 48
#define REQ_MAX_TEXT 160

struct req_rule {
  unsigned n;
  struct {
    uint8_t op;  /* enum in require.c */
    uint8_t arg; /* argument index for loads */
    int64_t v;   /* literal */
  } code[REQ_MAX_CODE];
  char text[REQ_MAX_TEXT];
};

/* names[i] is argument i's name ("" for none: then only argI names it);
 * types[i] an enum coop_arg_type. 0, or -1 with a message. */
int req_compile(struct req_rule *r, const char *text, const char (*names)[32], const uint8_t *types,
                unsigned nargs, char *err, size_t errlen);

/* bits[i]: scalar bits as on the wire; lens[i]: buffer byte lengths.
 * 0 when the rule holds; -1 with a message naming the rule and the values. */
int req_check(const struct req_rule *r, const char (*names)[32], const uint8_t *types,
              const uint64_t *bits, const uint64_t *lens, char *why, size_t whylen);

#endif /* COOPD_REQUIRE_H */
