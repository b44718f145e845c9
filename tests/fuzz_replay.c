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
 *
 * Not crashing is the least an input must do. A directory may also hold a
 * file EXPECT (not replayed) whose lines say what the target makes of some
 * of its inputs: "NAME VERDICT", VERDICT being the rest of the line, as
 * the target's fuzz_verdict() writes it (fuzz_wire.c: the frames a
 * receiver takes and how the stream ends; fuzz_graph.c: the format and the
 * reader's result with its message). Blank lines and lines starting with
 * '#' are comments. An input whose verdict differs, or a NAME with no
 * file, fails the run after every input was replayed; a file not named
 * (a crash input that scripts/fuzz copied in) is only replayed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_verdict(const uint8_t *data, size_t size, char *out, size_t outlen);

static unsigned long nfiles, nchecked;

/* The EXPECT file of the directory being replayed. */
#define MAX_EXPECT 256
static struct expect {
  char name[1024], verdict[1024]; /* as long as a line */
  int seen;
} expects[MAX_EXPECT];
static unsigned nexpects;

static int load_expect(const char *dir) {
  char path[4096], line[1024];
  nexpects = 0;
  snprintf(path, sizeof path, "%s/EXPECT", dir);
  FILE *f = fopen(path, "r");
  if (!f) return errno == ENOENT ? 0 : -1;
  int r = 0;
  for (unsigned lineno = 1; fgets(line, sizeof line, f); lineno++) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0] || line[0] == '#') continue;
    char *sp = strchr(line, ' ');
    if (!sp || nexpects == MAX_EXPECT) {
      fprintf(stderr, "fuzz_replay: %s:%u: want \"NAME VERDICT\"\n", path, lineno);
      r = -1;
      continue;
    }
    struct expect *e = &expects[nexpects++];
    *sp = '\0';
    snprintf(e->name, sizeof e->name, "%s", line);
    snprintf(e->verdict, sizeof e->verdict, "%s", sp + 1);
    e->seen = 0;
  }
  fclose(f);
  return r;
}

/* 0, or -1 if the input's verdict is not the one EXPECT gives. */
static int check_verdict(const char *name, const uint8_t *data, size_t len) {
  for (unsigned i = 0; i < nexpects; i++) {
    if (strcmp(expects[i].name, name)) continue;
    char got[1024];
    fuzz_verdict(data, len, got, sizeof got);
    expects[i].seen = 1;
    if (!strcmp(got, expects[i].verdict)) {
      nchecked++;
      printf("fuzz_replay: %s: %s\n", name, got);
      return 0;
    }
    fprintf(stderr, "fuzz_replay: %s: want \"%s\"\n  got \"%s\"\n", name, expects[i].verdict, got);
    return -1;
  }
  return 0;
}

static int replay_file(const char *path, const char *name) {
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
  int r = name ? check_verdict(name, exact, len) : 0;
  free(exact);
  nfiles++;
  return r;
}

static int replay_path(const char *path) {
  struct stat st;
  if (stat(path, &st)) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return replay_file(path, NULL);
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  int r = load_expect(path);
  struct dirent *e;
  while ((e = readdir(d))) {
    char sub[4096];
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "EXPECT")) continue;
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    if (!stat(sub, &st) && S_ISREG(st.st_mode) && replay_file(sub, e->d_name)) r = -1;
  }
  closedir(d);
  for (unsigned i = 0; i < nexpects; i++)
    if (!expects[i].seen) {
      fprintf(stderr, "fuzz_replay: %s/EXPECT names %s, which is not there\n", path,
              expects[i].name);
      r = -1;
    }
  nexpects = 0;
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
  printf("fuzz_replay: %lu inputs replayed, %lu verdicts as expected\n", nfiles, nchecked);
  return r;
}
