#!/bin/sh
# docs_kernels.sh: every kernel example of the docs is a real kernel. A
# ```c block preceded by the line
#   <!-- docs_run: kernel NAME KIND args=... -->
# (docs_run.sh's marker; KIND cooperative or noncooperative) becomes the
# kernel file NAME.cl, its //@coop line made from the marker and a #line
# that points the compiler back at the document. All of them are compiled
# together by coopd on PoCL, through NVRTC where the build has it
# (nvrtc_compile), and the examples of docs/kernels.md then run through
# coopctl on small inputs, their outputs checked.
#
# usage: docs_kernels.sh SOURCE_DIR COOPD COOPCTL [EMIT_SOURCE NVRTC_COMPILE]
set -u
src=$1 coopd=$2 coopctl=$3 emit=${4:-} nvrtc=${5:-}
. "$(dirname "$0")/coopctl_lib.sh"

mkdir "$dir/k"
cd "$src" || exit 1
for f in README.md docs/*.md docs/*/*.md; do
  [ -f "$f" ] || continue
  awk -v F="$f" -v OUT="$dir/k" '
    /^<!-- docs_run: kernel / { split($0, m, " "); name = m[4]; hdr = "//@coop name=" m[4] " kind=" m[5] " " m[6]; next }
    /^```c$/ && name != "" { cur = OUT "/" name ".cl"; print hdr > cur; print "#line " NR + 1 " \"" F "\"" > cur; inb = 1; name = ""; next }
    /^```/ && inb { close(cur); inb = 0; next }
    inb { print > cur }
    NF { if ($0 !~ /^<!-- docs_run: kernel /) name = "" }
  ' "$f"
done
n=$(ls "$dir/k" | wc -l)
echo "$n kernel examples: $(cd "$dir/k" && echo *.cl)"
[ "$n" -ge 3 ] || fail "fewer than 3 kernel examples found"

# PoCL: coopd builds the program at start (a compile error names the
# document and line, and coopd exits)
start_coopd "$coopd" --kernels "$dir/k" >"$dir/stdout"
cat "$dir/stdout"
# NVRTC, as the CUDA backend compiles
if [ -n "$nvrtc" ]; then
  if "$emit" "$dir"/k/*.cl | "$nvrtc" >"$dir/nvrtc.log" 2>&1; then
    echo "ok: the examples compile through NVRTC"
  else
    fail "the examples do not compile through NVRTC:"
    cat "$dir/nvrtc.log"
  fi
fi

# u32 words to a file, and a file's u32 words on one line
words() { out=$1; shift; perl -e 'print pack("V*", @ARGV)' "$@" >"$out"; }
show() { od -An -tu4 -v "$1" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }

# sum: 3 rounds add 9 to each of 40 elements
words "$dir/a" $(seq 1 40)
expect_out "done" "$coopctl" --socket "$sock" submit sum --coop --query-barrier --wg 3 --wait \
  "inout:$dir/a" u32:40 u32:3
[ "$(show "$dir/a")" = "$(seq 10 49 | tr '\n' ' ' | sed 's/ $//')" ] ||
  fail "sum: $(show "$dir/a")"

# bfs: the path 0-1-2-3 and a vertex 4 nobody reaches
words "$dir/row" 0 1 2 3 3 3
words "$dir/col" 1 2 3
words "$dir/dist" 0 4294967295 4294967295 4294967295 4294967295
words "$dir/f0" 0 0 0 0 0
words "$dir/size" 1 0
expect_out "done" "$coopctl" --socket "$sock" submit bfs --coop --query-barrier --wg 2 --wait \
  "in:$dir/row" "in:$dir/col" "inout:$dir/dist" "in:$dir/f0" zeros:20 "in:$dir/size"
[ "$(show "$dir/dist")" = "0 1 2 3 4294967295" ] || fail "bfs: dist $(show "$dir/dist")"

# ws: 20 tasks on queue 0 of 4 (capacity 32), stolen by the others
words "$dir/qctl" 0 0 20 0 0 0 0 0 0 0 0 0 0 0 0 0
words "$dir/outst" 20
words "$dir/items" $(seq 0 19) $(seq 1 108 | sed 's/.*/0/')
expect_out "done" "$coopctl" --socket "$sock" submit ws --coop --wg 3 --wait "in:$dir/qctl" \
  "inout:$dir/outst" "in:$dir/items" out:80:"$dir/done" u32:4 u32:32
[ "$(show "$dir/done")" = "$(seq 1 20 | sed 's/.*/1/' | tr '\n' ' ' | sed 's/ $//')" ] ||
  fail "ws: done $(show "$dir/done")"
[ "$(show "$dir/outst")" = 0 ] || fail "ws: outstanding $(show "$dir/outst")"

# hello: printf, one line per workgroup on coopd's standard output while
# the megakernel runs (within 10 s; PoCL's stdio may hold it a moment)
expect_out "done" "$coopctl" --socket "$sock" submit hello --wg 2 --wait u64:0x100000000
i=0
while [ "$(grep -c '^hello from' "$dir/stdout")" -lt 2 ] && [ $i -lt 100 ]; do
  sleep 0.1
  i=$((i + 1))
done
echo "printf's lines after $i tenths of a second"
for g in 0 1; do
  grep -q "^hello from group $g of 2, v 4294967296\$" "$dir/stdout" ||
    fail "hello: no line of group $g on coopd's stdout: $(cat "$dir/stdout")"
done

stop_coopd
finish
