/*
 * coop_copy.h: a wire struct into its coop.h twin, field by field from the
 * one list of its fields (protocol/coop_schema.h), so that libcoop names
 * each field once (not installed). In a function with `d` (the coop.h
 * struct) and `s` (the wire's):
 *   COOP_SCHEMA_WELCOME(COOP__COPY)
 * Strings are copied terminated; COUNT32 fields count records, which the
 * caller copies itself, as it does arrays and SUBMIT flags (coop.h spells
 * those bits out). Its includer includes coop.h or coop_stats.h for the
 * structs it fills; TIMES fields call coop__copy_times, which libcoop
 * defines (coop_internal.h).
 */
#ifndef COOP_COPY_H
#define COOP_COPY_H

#include <stdio.h>

#include "wire.h"

#define COOP__COPY(kind, name, arg) COOP__COPY_##kind(d->name, s->name);

#define COOP__COPY_U8(dst, src) ((dst) = (src))
#define COOP__COPY_U16 COOP__COPY_U8
#define COOP__COPY_U32 COOP__COPY_U8
#define COOP__COPY_U64 COOP__COPY_U8
#define COOP__COPY_I32 COOP__COPY_U8
#define COOP__COPY_I64 COOP__COPY_U8
#define COOP__COPY_STATE COOP__COPY_U8
#define COOP__COPY_BOOL COOP__COPY_U8
#define COOP__COPY_EVKIND COOP__COPY_U8
#define COOP__COPY_WGSTATE COOP__COPY_U8
#define COOP__COPY_NDEV COOP__COPY_U8
#define COOP__COPY_COUNT8 COOP__COPY_U8
#define COOP__COPY_NAME(dst, src) snprintf(dst, sizeof(dst), "%s", src)
#define COOP__COPY_TEXT COOP__COPY_NAME
#define COOP__COPY_TIMES(dst, src) coop__copy_times(&(dst), &(src))
#define COOP__COPY_FLAGS(dst, src) (void)0
#define COOP__COPY_COUNT32(dst, src) (void)0

#endif /* COOP_COPY_H */
