/* check_run.c: see check_run.h. */
#include <stdlib.h>

#include "check_run.h"

int coop_test_run(SRunner *sr) {
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
