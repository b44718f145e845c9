#!/bin/sh
# bench/frame_path.sh TRACE.csv: coopd's path for the frames of
# coop-bench-side's frame client (g) in a COOP_TRACE_FILE, in file order
# split in two halves: the first its frames alone, the second those beside
# the long kernel (the order (g) runs its rows in; frame_hold_gpu.sh writes
# one trace per run). The frames are the jobs whose ranges went with their
# submit (io_with set), or every job with a read and an end where none
# did. Per half, p50 in us: the SUBMIT's decode and checks (recv ->
# decoded and decoded -> checked, each leg's p50, added), the device thread's take -> its request sent (taken ->
# io_sent), coopd's part outside the task's run (recv -> RESULT sent, less
# started -> finished), and the task's run (started -> finished).
# bench/RESULTS.md, "A frame loop's SUBMIT checked ahead".
set -eu
case "${1:-}" in -h | --help) sed -n '2,12p' "$0"; exit 0 ;; esac
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: bench/frame_path.sh TRACE.csv (--help)" >&2; exit 2; }
awk -F, '
  $1 == "id" { for (i = 1; i <= NF; i++) c[$i] = i; next }
  $1 !~ /^[0-9]+$/ || !("recv" in c) { next }
  $c["recv"] + 0 > 0 && $c["finished"] + 0 > 0 && $c["result_sent"] + 0 > 0 {
    n++; with[n] = ("io_with" in c) && $c["io_with"] + 0 > 0; nwith += with[n]
    de[n] = $c["decoded"] + 0 > 0 ? ($c["decoded"] - $c["recv"]) / 1e3 : ""
    ch[n] = $c["checked"] + 0 > 0 && $c["decoded"] + 0 > 0 ? ($c["checked"] - $c["decoded"]) / 1e3 : ""
    tr[n] = $c["io_sent"] + 0 > 0 && $c["taken"] + 0 > 0 ? ($c["io_sent"] - $c["taken"]) / 1e3 : ""
    run[n] = ($c["finished"] - $c["started"]) / 1e3
    out[n] = ($c["result_sent"] - $c["recv"]) / 1e3 - run[n]
  }
  # the median, the upper one of an even count
  function p50(a, k,   i, j, t) {
    if (!k) return "-"
    for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return sprintf("%.1f", a[int(k / 2) + 1])
  }
  function half(name, from, to,   i, k, a, d, b, o, r, na, nd, nb, pa, pd) {
    k = na = nd = nb = 0
    for (i = from; i <= to; i++) {
      k++; o[k] = out[f[i]]; r[k] = run[f[i]]
      if (de[f[i]] != "") a[++na] = de[f[i]]
      if (ch[f[i]] != "") d[++nd] = ch[f[i]]
      if (tr[f[i]] != "") b[++nb] = tr[f[i]]
    }
    pa = p50(a, na); pd = p50(d, nd)
    printf "%-6s frames %d: decode + checks %s, take -> request %s, coopd outside the run %s, the task'"'"'s run %s\n",
      name, k, pa == "-" || pd == "-" ? "-" : sprintf("%.1f", pa + pd), p50(b, nb), p50(o, k), p50(r, k)
  }
  END {
    if (!n) { print "frame_path.sh: no job with a read, an end and a RESULT in the trace" > "/dev/stderr"; exit 1 }
    for (i = 1; i <= n; i++) if (!nwith || with[i]) f[++m] = i
    printf "%s\n", nwith ? "frames: the jobs whose ranges went with their submit" : "frames: every job (none moved its ranges with its submit)"
    half("alone", 1, int(m / 2)); half("beside", int(m / 2) + 1, m)
  }' "$1"
