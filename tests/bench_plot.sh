#!/bin/sh
# bench_plot.sh: bench/plot draws every figure bench/RESULTS.md and
# bench/HISTORY.md embed, from the CSV files in bench/data, as 800 x 450
# PNGs; and every figure they name is committed in bench/figures. Exit 77
# (skipped) without gnuplot.
#
# usage: bench_plot.sh SOURCE_DIR
set -u
src=$1
command -v gnuplot >/dev/null 2>&1 || { echo "no gnuplot: skipped"; exit 77; }
dir=$(mktemp -d /tmp/bench-plot-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

"$src/bench/plot" --out "$dir" >"$dir/log" 2>&1 || { cat "$dir/log"; fail "bench/plot failed"; }
# PNG width and height: the IHDR chunk's first 8 bytes, big-endian, at 16
size() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4 "x" $5*16777216 + $6*65536 + $7*256 + $8 }'; }
results=$src/bench/RESULTS.md
history=$src/bench/HISTORY.md
names=$(sed -n 's/.*](figures\/\([a-z0-9-]*\)\.png).*/\1/p' "$results" "$history" | sort -u)
[ -n "$names" ] || fail "bench/RESULTS.md and bench/HISTORY.md embed no figure"
for n in $names; do
  f=$dir/$n.png
  if [ ! -s "$f" ]; then
    fail "bench/plot did not draw $n.png"
    continue
  fi
  [ "$(od -An -c -N4 "$f" | tr -d ' ')" = "211PNG" ] || fail "$n.png is not a PNG"
  [ "$(size "$f")" = "800x450" ] || fail "$n.png is $(size "$f"), not 800x450"
  [ "$(wc -c <"$f")" -lt 100000 ] || fail "$n.png is over 100 kB"
  [ -s "$src/bench/figures/$n.png" ] || fail "bench/figures/$n.png is not committed"
  grep -q "bench/plot $n\`" "$results" "$history" || fail "neither RESULTS.md nor HISTORY.md says how to redraw $n"
  echo "ok: $n.png ($(wc -c <"$f") bytes)"
done
# a figure bench/plot does not know is an error, not a silent success
"$src/bench/plot" --out "$dir" no-such-figure >/dev/null 2>&1 && fail "an unknown figure passed"
echo "bench_plot: $fails failed"
[ "$fails" -eq 0 ]
