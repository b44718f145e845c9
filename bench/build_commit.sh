# shellcheck shell=bash
# build_commit.sh: the commit a build's binaries were made from, for the
# bench scripts' headers. Sourced:
#
#   . "$repo/bench/build_commit.sh"; echo "commit: $(build_commit "$bdir" "$repo")"
#
# bench/CMakeLists.txt stamps it into BDIR/bench/bench_commit.h at build
# time; the tree's HEAD may have moved on since (a build carried to a GPU
# machine, a checkout edited after building), so it is the figure's
# commit. Without the stamp: the tree's HEAD, marked as such.
build_commit() {
  local bdir=$1 repo=${2:-.} c
  c=$(sed -n 's/^#define COOP_BENCH_COMMIT "\(.*\)"$/\1/p' "$bdir/bench/bench_commit.h" 2>/dev/null)
  if [ -n "$c" ]; then
    echo "$c"
  else
    c=$(git -c safe.directory="$repo" -C "$repo" rev-parse --short HEAD 2>/dev/null) || c=unknown
    echo "$c (the tree's HEAD: $bdir has no stamp)"
  fi
}
