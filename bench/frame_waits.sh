#!/bin/sh
# frame_waits.sh TRACE [US]: the short jobs of a COOP_TRACE_FILE (docs/daemon.md,
# "The path of one job, leg by leg") that waited more than US us (default
# 300) between `queued` and `taken`, coopd's device thread busy elsewhere,
# counted by what the long jobs (over 5 ms on the device) were doing when
# they were queued: staging (taken..staged), running (staged..seen),
# unstaging (seen..handed_back), or none of these. Prints one line a phase
# and the total: "PHASE: N (max US us)"; then, from the trace's dpcall
# lines (the device process requests of 100 us or more), what those waits
# lay in: "in OP: US us over N waits", and "outside such requests: US us"
# (the device thread's own work, or requests under 100 us); last, how many
# such requests of each op the run made: "requests of 100 us or more: OP N ...".
set -eu
case "${1:-}" in
  -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
  '') sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
[ -r "$1" ] || { echo "frame_waits.sh: cannot read $1" >&2; exit 1; }
awk -F, -v lim="${2:-300}" '
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
$1 == "dpcall" && $2 != "op" { nc++; cop[nc] = $2; cs[nc] = $3; cb[nc] = $6; nop[$2]++; next }
$1 !~ /^[0-9]+$/ { next }
($(c["finished"]) - $(c["started"])) > 5e6 {
  n++; T[n] = $(c["taken"]); S[n] = $(c["staged"]); F[n] = $(c["seen"]); H[n] = $(c["handed_back"]); next
}
{ q[$1] = $(c["queued"]); tk[$1] = $(c["taken"]); jobs++ }
END {
  for (id in q) {
    d = (tk[id] - q[id]) / 1000
    if (d <= lim) continue
    ph = "none"
    for (i = 1; i <= n; i++)
      if (q[id] >= T[i] && q[id] <= S[i]) ph = "staging"
      else if (q[id] > S[i] && q[id] < F[i]) ph = "running"
      else if (q[id] >= F[i] && q[id] <= H[i]) ph = "unstaging"
    cnt[ph]++; all++
    if (d > mx[ph]) mx[ph] = d
    inside = 0
    for (k = 1; k <= nc; k++) {
      lo = cs[k] > q[id] ? cs[k] : q[id]; hi = cb[k] < tk[id] ? cb[k] : tk[id]
      if (hi <= lo) continue
      held[cop[k]] += (hi - lo) / 1000; hn[cop[k]]++; inside += (hi - lo) / 1000
    }
    outside += d - inside
  }
  for (p in cnt) printf "%s: %d (max %.0f us)\n", p, cnt[p], mx[p]
  printf "short jobs %d, waited over %d us: %d\n", jobs, lim, all
  if (nc) {
    for (o in held) printf "in %s: %.0f us over %d waits\n", o, held[o], hn[o]
    printf "outside such requests: %.0f us\n", outside
    printf "requests of 100 us or more:"
    for (o in nop) printf " %s %d", o, nop[o]
    printf "\n"
  }
}' "$1"
