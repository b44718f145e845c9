/* cubin.c: see cubin.h. The ELF is read byte by byte (little-endian, as
 * every cubin is), each offset checked against the buffer first. */
#include "cubin.h"

#include <stdint.h>
#include <string.h>

#include "coop_rt.h" /* COOP_EINVAL */

struct elf {
  const uint8_t *p;
  size_t len;
  uint64_t shoff;
  unsigned shnum, shentsize, shstrndx;
};

struct sec {
  uint32_t name, type, info, link;
  uint64_t off, size;
};

#define SHT_SYMTAB_ 2u
#define SHT_NOBITS_ 8u /* .nv.shared: a size, no bytes in the file */
#define SYM_BYTES 24u

static uint64_t rd(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* [off, off + n) inside the buffer, without overflow */
static int inside(const struct elf *e, uint64_t off, uint64_t n) {
  return off <= e->len && n <= e->len - off;
}

static int section(const struct elf *e, unsigned i, struct sec *s) {
  uint64_t at = e->shoff + (uint64_t)i * e->shentsize;
  if (i >= e->shnum || !inside(e, at, 64)) return -1;
  const uint8_t *h = e->p + at;
  s->name = (uint32_t)rd(h, 4);
  s->type = (uint32_t)rd(h + 4, 4);
  s->off = rd(h + 24, 8);
  s->size = rd(h + 32, 8);
  s->link = (uint32_t)rd(h + 40, 4);
  s->info = (uint32_t)rd(h + 44, 4);
  return s->type == SHT_NOBITS_ || inside(e, s->off, s->size) ? 0 : -1;
}

/* The NUL-terminated string at index idx of string table section t, or
 * NULL if it runs past the section. */
static const char *str_at(const struct elf *e, const struct sec *t, uint64_t idx) {
  if (idx >= t->size) return NULL;
  const char *s = (const char *)e->p + t->off + idx;
  return memchr(s, '\0', t->size - idx) ? s : NULL;
}

static int name_is(const struct elf *e, const struct sec *shstr, const struct sec *s,
                   const char *prefix, const char *fn) {
  const char *n = str_at(e, shstr, s->name);
  size_t k = strlen(prefix);
  return n && !strncmp(n, prefix, k) && !strcmp(n + k, fn ? fn : "");
}

/* fn's index in the symbol table, or -1 */
static long symbol(const struct elf *e, const struct sec *symtab, const char *fn) {
  struct sec strtab;
  if (section(e, symtab->link, &strtab) || strtab.type == SHT_NOBITS_) return -1;
  for (uint64_t i = 0; i < symtab->size / SYM_BYTES; i++) {
    const char *n = str_at(e, &strtab, rd(e->p + symtab->off + i * SYM_BYTES, 4));
    if (n && !strcmp(n, fn)) return (long)i;
  }
  return -1;
}

/* The attributes of .nv.info that name symbol sym. Entries are a format
 * byte, an attribute byte, then a 2-byte value (NVAL, BVAL, HVAL) or a
 * 2-byte size and that many bytes (SVAL); an unknown format ends the walk. */
static void nv_info(const struct elf *e, const struct sec *s, long sym,
                    struct coop__cubin_figures *f) {
  const uint8_t *b = e->p + s->off;
  for (uint64_t at = 0; at + 4 <= s->size;) {
    unsigned fmt = b[at], attr = b[at + 1];
    uint64_t size = fmt == COOP_EIFMT_SVAL ? rd(b + at + 2, 2) : 0;
    if (fmt < COOP_EIFMT_NVAL || fmt > COOP_EIFMT_SVAL || size > s->size - at - 4) return;
    if (fmt == COOP_EIFMT_SVAL && size == 8 && (long)rd(b + at + 4, 4) == sym) {
      int v = (int)(rd(b + at + 8, 4) & 0x7fffffff);
      if (attr == COOP_EIATTR_REGCOUNT) f->regs = v;
      if (attr == COOP_EIATTR_FRAME_SIZE) f->frame_bytes = v;
    }
    at += 4 + size;
  }
}

int coop__cubin_figures(const void *p, size_t len, const char *fn,
                        struct coop__cubin_figures *out) {
  out->regs = out->shared_bytes = out->frame_bytes = -1;
  const uint8_t *b = p;
  if (!p || !fn || len < 64 || memcmp(b, "\177ELF", 4) || b[4] != 2 || b[5] != 1)
    return COOP_EINVAL;
  struct elf e = {b,
                  len,
                  rd(b + 0x28, 8),
                  (unsigned)rd(b + 0x3c, 2),
                  (unsigned)rd(b + 0x3a, 2),
                  (unsigned)rd(b + 0x3e, 2)};
  struct sec shstr, s, text = {0};
  if (e.shentsize < 64 || section(&e, e.shstrndx, &shstr) || shstr.type == SHT_NOBITS_)
    return COOP_EINVAL;
  long sym = -1;
  int have_text = 0;
  for (unsigned i = 0; i < e.shnum; i++)
    if (section(&e, i, &s) == 0 && s.type == SHT_SYMTAB_ && sym < 0) sym = symbol(&e, &s, fn);
  out->shared_bytes = 0; /* no .nv.shared section: none */
  for (unsigned i = 0; i < e.shnum; i++) {
    if (section(&e, i, &s)) continue;
    if (name_is(&e, &shstr, &s, ".nv.info", NULL) && sym >= 0 && s.type != SHT_NOBITS_)
      nv_info(&e, &s, sym, out);
    if (name_is(&e, &shstr, &s, ".text.", fn)) text = s, have_text = 1;
    if (name_is(&e, &shstr, &s, ".nv.shared.", fn)) out->shared_bytes = (int)(s.size & 0x7fffffff);
  }
  if (!have_text && sym < 0) {
    out->shared_bytes = -1;
    return COOP_EINVAL;
  }
  if (out->regs < 0 && have_text) out->regs = (int)(text.info >> 24);
  return 0;
}
