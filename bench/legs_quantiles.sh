# bench/legs_quantiles.sh: sourced by the trace scripts (trace_split.sh,
# side_client_legs.sh). legs_quantiles DIR: for each file of DIR, one
# number a line (a leg's us), its name, p50, p90 and count; returns 1 if
# DIR holds none.
legs_quantiles() {
  found=1
  for f in "$1"/*; do
    [ -e "$f" ] || return 1
    found=0
    n=$(wc -l < "$f")
    sort -n "$f" > "$f.sorted"
    printf "  %-40s %9s %9s (%s)\n" "${f##*/}" "$(sed -n "$(( (n + 1) / 2 ))p" "$f.sorted")" \
      "$(sed -n "$(( n * 9 / 10 > 0 ? n * 9 / 10 : 1 ))p" "$f.sorted")" "$n"
    rm "$f.sorted"
  done
  return $found
}
