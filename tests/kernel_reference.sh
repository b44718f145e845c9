#!/bin/sh
# kernel_reference.sh SOURCE_DIR: docs/kernels.md's "Reference" names
# every name a kernel may use, and nothing else, so that it cannot drift
# from the headers. The names in the headers: what
# megakernel/device/dialect.h and api.h define, the kernel-level calls of
# barrier.cl and taskqueue.cl (coop_global_barrier, the task queues) and
# shared.h's COOP_TRANSMIT_BYTES. Public is every coop_ or COOP_ name; the
# runtime's own start with coop__ or COOP__, include guards end in _H. The
# names in the reference: the first `code` of each table row of that
# section, up to its first parenthesis.
set -eu
src=$1
d=$src/megakernel/device
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coop-ref-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
{
  sed -n 's/^#define \(coop_[a-z0-9_]*\|COOP_[A-Z0-9_]*\).*/\1/p' "$d/dialect.h" "$d/api.h" \
    "$d/taskqueue.cl"
  sed -n 's/^#define \(COOP_TRANSMIT_BYTES\) .*/\1/p' "$d/shared.h"
  sed -n 's/^COOP_FN0\{0,1\} [^(]*[ *]\(coop_[a-z0-9_]*\)(.*/\1/p' "$d/dialect.h" "$d/api.h" \
    "$d/barrier.cl" "$d/taskqueue.cl"
  sed -n 's/^typedef [^;]*[ *]\(coop_[a-z0-9_]*\);.*/\1/p' "$d/dialect.h" "$d/api.h"
  sed -n 's/^struct \(coop_[a-z0-9_]*\) {.*/\1/p' "$d/api.h"
  sed -n 's/^COOP__\(ARG_\|SCRATCH_\)\{0,1\}VIEW(\([a-z0-9_]*\), \([a-z0-9_]*\).*/\2\n\3/p' "$d/api.h"
} | grep -v '^coop__\|^COOP__\|_H$\|^$' | sort -u >"$tmp/headers"
awk '/^## / { inref = ($0 == "## Reference") } inref && /^\| `/' "$src/docs/kernels.md" |
  sed 's/^| `\([A-Za-z0-9_]*\).*/\1/' | sort -u >"$tmp/doc"
[ "$(wc -l <"$tmp/headers")" -gt 50 ] || { echo "too few names in the headers"; exit 1; }
missing=$(comm -23 "$tmp/headers" "$tmp/doc")
stale=$(comm -13 "$tmp/headers" "$tmp/doc")
[ -z "$missing" ] || echo "docs/kernels.md, Reference: missing $(echo $missing)"
[ -z "$stale" ] || echo "docs/kernels.md, Reference: not in the headers: $(echo $stale)"
[ -z "$missing$stale" ] || exit 1
echo "kernel_reference: $(wc -l <"$tmp/headers") names, all in the reference"
