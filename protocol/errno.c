/* errno.c: messages and names for the codes of coop_errno.h. */
#include "coop_errno.h"

const char *coop_strerror(int err) {
  switch (err) {
    case 0:
      return "success";
#define COOP__ERR_MSG(name, val, msg) \
  case COOP_##name:                   \
    return msg;
      COOP_ERRNO_MAP(COOP__ERR_MSG)
#undef COOP__ERR_MSG
  }
  return "unknown error";
}

const char *coop_err_name(int err) {
  switch (err) {
    case 0:
      return "OK";
#define COOP__ERR_NAME(name, val, msg) \
  case COOP_##name:                    \
    return #name;
      COOP_ERRNO_MAP(COOP__ERR_NAME)
#undef COOP__ERR_NAME
  }
  return "UNKNOWN";
}
