#!/bin/bash
# docs_run.sh: every ```sh block of README.md and docs/
# runs as written, each in a fresh `bash -e` (any command that fails fails
# the block), from a directory that looks like the source tree with the
# build as build/ (entries of the tree are symlinked; files a block writes
# stay there). Two things differ from a reader's shell, and only these:
#   - /tmp/ in a block means this test's temporary directory (no fixed
#     paths on a shared machine);
#   - a block that starts no coopd gets one, at $COOP_SOCKET.
# A block preceded by the line <!-- docs_run: skip: WHY --> is not run (it
# needs a GPU, root or a cluster; WHY must say which). Every background job
# a block leaves is killed when it ends. A ```c block preceded by
# <!-- docs_run: kernel NAME KIND args=... --> is a kernel example, which
# docs_kernels.sh compiles and runs.
#
# usage: docs_run.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
tmp=$(mktemp -d /tmp/docs-run-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0 ran=0 skipped=0

# blocks as $tmp/blocks/N.sh, with "# FILE:LINE" first; skipped ones listed
mkdir "$tmp/blocks"
cd "$src" || exit 1
fi=0
: >"$tmp/skipped"
for f in README.md docs/*.md docs/*/*.md; do
  [ -f "$f" ] || continue
  fi=$((fi + 1))
  # inb: 0 outside a block, 1 in a block to run, 2 in one not to run
  awk -v F="$f" -v OUT="$tmp/blocks/$fi" '
    /^```/ {
      if (inb) { if (inb == 1) close(cur); inb = 0; next }
      if (substr($0, 4) != "sh") { inb = 2; next }
      if (prev ~ /^<!-- docs_run: skip: .+ -->$/) { print F ":" NR " " prev; inb = 2; next }
      cur = sprintf("%s_%05d.sh", OUT, NR)
      print "# " F ":" NR > cur
      inb = 1
      next
    }
    inb == 1 { print > cur }
    inb == 0 && NF { prev = $0 }
  ' "$f" | sed 's|^|skipped: |' >>"$tmp/skipped"
done
skipped=$(wc -l <"$tmp/skipped")
cat "$tmp/skipped"

# the tree as blocks see it
mkdir "$tmp/tree" "$tmp/t"
for e in "$src"/*; do
  [ "$(basename "$e")" = build ] || ln -s "$e" "$tmp/tree/$(basename "$e")"
done
ln -s "$(cd "$build" && pwd)" "$tmp/tree/build"

for b in "$tmp"/blocks/*.sh; do
  [ -f "$b" ] || continue
  where=$(head -1 "$b" | cut -c3-)
  body="$tmp/body.sh"
  {
    echo 'set -e'
    # the trap runs under -e too: its kill of a coopd that the block's own
    # `kill %1` has stopped meanwhile ("No such process") failed the block
    echo 'trap '\''kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true'\'' EXIT'
    if ! grep -q 'coopd ' "$b"; then
      echo "coopd_own=1"
      echo "build/bin/coopd --socket '$tmp/t/own.sock' --kernels kernels --log-level warn &"
      echo "export COOP_SOCKET='$tmp/t/own.sock'"
      echo "while [ ! -S '$tmp/t/own.sock' ]; do sleep 0.1; done"
    fi
    sed "s|/tmp/|$tmp/t/|g" "$b"
  } >"$body"
  t0=$(date +%s)
  echo "== $where"
  (cd "$tmp/tree" && timeout 120 bash -e "$body") >"$tmp/out" 2>&1
  st=$?
  ran=$((ran + 1))
  if [ $st -ne 0 ]; then
    fails=$((fails + 1))
    echo "FAIL ($st): the block at $where:"
    sed 's/^/    | /' "$b" | tail -n +2
    echo "  its output:"
    sed 's/^/    /' "$tmp/out" | tail -40
  else
    echo "ok, $(($(date +%s) - t0)) s"
  fi
  rm -f "$tmp"/t/*.sock
done
echo "$ran blocks run, $skipped skipped, $fails failed"
[ "$ran" -gt 0 ] && [ "$fails" -eq 0 ]
