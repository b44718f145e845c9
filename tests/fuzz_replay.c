/*
 * fuzz_replay.c: a main() for a libFuzzer target built with the project
 * compiler (gcc, no libFuzzer): runs LLVMFuzzerTestOneInput once on each
 * file named, and on each regular file in each directory named (not
 * recursive, dot files skipped), each in a buffer of exactly its size so
 * that AddressSanitizer sees a read past the end.
 *
 * ctest uses it to replay the regression corpora under tests/data/
 * (wire_corpus, graph_corpus), where scripts/fuzz copies the inputs that
 * made a libFuzzer run fail: once there, such an input fails this test
 * until the bug is fixed, in every build (sanitized or not, under valgrind).
 * A failing input aborts inside the target; its name is the last line
 * printed before.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long nfiles;

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  uint8_t *p = NULL;
  size_t cap = 0, len = 0, k;
  do {
    if (len == cap && !(p = realloc(p, cap = cap ? 2 * cap : 4096))) abort();
    k = fread(p + len, 1, cap - len, f);
    len += k;
  } while (k);
  fclose(f);
  /* exact size: the read buffer above is usually larger */
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) abort();
  memcpy(exact, p, len);
  free(p);
  printf("fuzz_replay: %s (%zu bytes)\n", path, len);
  fflush(stdout);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  nfiles++;
  return 0;
}

static int replay_path(const char *path) {
  struct stat st;
  if (stat(path, &st)) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return replay_file(path);
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  struct dirent *e;
  int r = 0;
  while ((e = readdir(d))) {
    char sub[4096];
    if (e->d_name[0] == '.') continue;
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    if (!stat(sub, &st) && S_ISREG(st.st_mode) && replay_file(sub)) r = -1;
  }
  closedir(d);
  return r;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: %s FILE|DIR ...\n", argv[0]);
    return 2;
  }
  int r = 0;
  for (int i = 1; i < argc; i++)
    if (replay_path(argv[i])) r = 1;
  printf("fuzz_replay: %lu inputs replayed\n", nfiles);
  return r;
}
