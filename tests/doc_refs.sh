#!/bin/sh
# doc_refs.sh: every file of the tree that a source comment, a build file
# or a document names by its path from the top (tests/..., docs/...,
# daemon/..., with an extension) exists, so that a file that moves or goes
# leaves no reference behind (megakernel/device/api.h named a kernel-checking
# script long after tests/kernels_use_views.cmake replaced it;
# docs/faults.md named an apps page that is a directory, docs/apps/). Not
# checked: outputs the benchmarks write (bench/out/*.csv) and placeholders
# (kernels/apps/NAME.cl, bench/out/micro-BACKEND.csv).
#
# usage: doc_refs.sh SOURCE_DIR
set -u
cd "$1" || exit 1
# runtime/: megakernel/'s former name, kept so that a path left behind by the
# move is still caught
tops='tests|docs|bench|scripts|conf|kernels|apps|daemon|client|megakernel|runtime|protocol|cmake|completions|python|examples'
exts='c|h|sh|md|cmake|py|cl|ini|service|socket|conf|txt|map|in|png|csv|supp'
refs=$(mktemp) || exit 1
trap 'rm -f "$refs"' EXIT
find . \( -path ./.git -o -path './build*' -o -path ./Testing -o -path ./tests/data \) -prune -o \
  -type f \( -name '*.[ch]' -o -name '*.md' -o -name '*.cmake' -o -name '*.sh' -o -name '*.py' \
  -o -name '*.cl' -o -name '*.ini' -o -name '*.in' -o -name '*.service' -o -name '*.socket' \
  -o -name CMakeLists.txt \) -print |
  while read -r f; do
    grep -oE "(^|[^A-Za-z0-9_./-])($tops)/[A-Za-z0-9_.+/-]*[A-Za-z0-9_]\.($exts)\b" "$f" |
      sed -E "s|^[^a-z]*||; s|^|${f#./} |"
  done | sort -u >"$refs"
n=$(wc -l <"$refs")
[ "$n" -gt 100 ] || {
  echo "FAIL: only $n references found: the search is broken"
  exit 1
}
fails=0
while read -r f r; do
  [ -e "$r" ] && continue
  case $r in bench/out/*.csv) continue ;; esac
  echo "$r" | grep -qE '(^|[/.-])(NAME|BACKEND|EXP)([/.-]|$)' && continue
  echo "FAIL: $f names $r, which does not exist"
  fails=$((fails + 1))
done <"$refs"
echo "$n references, $fails to files that do not exist"
[ "$fails" -eq 0 ]
