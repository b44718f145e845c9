/*
 * client.c: a program outside the tree, built against an installed libcoop
 * by tests/install_prefix.sh (with pkg-config, and with find_package). It
 * connects to $COOP_SOCKET and lists the kernels; exit 0 only if the kernel
 * named by argv[1] is among them, i.e. the daemon serves its installed set.
 */
#include <coop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *want = argc > 1 ? argv[1] : "sweep";
  coop_conn *c;
  int e = coop_connect(&c, NULL, "install-test");
  if (e) {
    fprintf(stderr, "connect: %s: %s\n", coop_strerror(e), coop_errmsg(NULL));
    return 1;
  }
  printf("coopd %s, backend %s\n", coop_info(c)->daemon_version, coop_info(c)->backend);
  struct coop_kernel *k;
  size_t n;
  e = coop_kernels(c, &k, &n);
  if (e) {
    fprintf(stderr, "kernels: %s\n", coop_strerror(e));
    coop_disconnect(c);
    return 1;
  }
  int found = 0;
  for (size_t i = 0; i < n; i++) {
    printf("kernel %s\n", k[i].name);
    found |= !strcmp(k[i].name, want);
  }
  free(k);
  coop_disconnect(c);
  if (!found) fprintf(stderr, "no kernel %s among %zu\n", want, n);
  return found ? 0 : 1;
}
