/* relocate.c: see relocate.h. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "relocate.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef COOP_KERNEL_REL
#define COOP_KERNEL_REL "../share/coop/kernels"
#endif

int paths_installed_kernels(char *out, size_t len) {
  /* /proc/self/exe: the binary itself, symbolic links resolved, whatever
   * argv[0] or PATH said */
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = '\0';
  char joined[PATH_MAX + sizeof COOP_KERNEL_REL + 1], real[PATH_MAX];
  snprintf(joined, sizeof joined, "%s/%s", exe, COOP_KERNEL_REL);
  struct stat st;
  if (!realpath(joined, real) || stat(real, &st) || !S_ISDIR(st.st_mode)) return -1;
  if (strlen(real) >= len) return -1;
  memcpy(out, real, strlen(real) + 1);
  return 0;
}
