/*
 * wire_types.h: every message type of protocol/wire.h, for the tests and
 * the fuzzer that walk them all (test_wire, fuzz_wire).
 */
#ifndef COOP_WIRE_TYPES_H
#define COOP_WIRE_TYPES_H

#include "wire.h"

#define COOP_TEST_MSG_TYPES                                                                        \
  {                                                                                                \
    COOP_MSG_HELLO, COOP_MSG_SUBMIT, COOP_MSG_STATUS, COOP_MSG_WAIT, COOP_MSG_CANCEL,              \
        COOP_MSG_STATS, COOP_MSG_KERNELS, COOP_MSG_SUBSCRIBE, COOP_MSG_WELCOME, COOP_MSG_ACCEPTED, \
        COOP_MSG_STATUS_REPLY, COOP_MSG_RESULT, COOP_MSG_OK, COOP_MSG_STATS_REPLY,                 \
        COOP_MSG_KERNEL_LIST, COOP_MSG_EVENT, COOP_MSG_ERROR, COOP_MSG_TOP, COOP_MSG_TOP_REPLY,    \
        COOP_MSG_RING_OPEN, COOP_MSG_RING_BELL, COOP_MSG_RING_WAKE                                 \
  }

#endif /* COOP_WIRE_TYPES_H */
