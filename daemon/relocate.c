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
#ifndef COOP_CONFIG_REL
#define COOP_CONFIG_REL "../etc/coop/coopd.ini"
#endif

/* The directory of this binary into dir (PATH_MAX bytes): 0, else -1.
 * /proc/self/exe: the binary itself, symbolic links resolved, whatever
 * argv[0] or PATH said. */
static int binary_dir(char *dir) {
  ssize_t n = readlink("/proc/self/exe", dir, PATH_MAX - 1);
  if (n <= 0) return -1;
  dir[n] = '\0';
  char *slash = strrchr(dir, '/');
  if (!slash) return -1;
  *slash = '\0';
  return 0;
}

/* rel, relative to the directory of this binary, canonical, into out, if
 * it exists and is a directory (dir) or a regular file: 0, else -1. */
static int beside_binary(const char *rel, int dir, char *out, size_t len) {
  char exe[PATH_MAX];
  if (binary_dir(exe)) return -1;
  char joined[2 * PATH_MAX], real[PATH_MAX];
  snprintf(joined, sizeof joined, "%s/%s", exe, rel);
  struct stat st;
  if (!realpath(joined, real) || stat(real, &st)) return -1;
  if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) return -1;
  if (strlen(real) >= len) return -1;
  memcpy(out, real, strlen(real) + 1);
  return 0;
}

int paths_installed_kernels(char *out, size_t len) {
  return beside_binary(COOP_KERNEL_REL, 1, out, len);
}

int paths_installed_config(char *out, size_t len) {
  /* /usr's settings live in /etc, where the install puts them and the
   * unit's --config names them (cmake/install_units.cmake), not /usr/etc */
  char exe[PATH_MAX];
  if (binary_dir(exe) == 0 && !strcmp(exe, "/usr/sbin"))
    return beside_binary("../../etc/coop/coopd.ini", 0, out, len);
  return beside_binary(COOP_CONFIG_REL, 0, out, len);
}
