#!/bin/sh
# bench/frame_guess.sh CLIENT.csv COOPD_TRACE.csv [OFF_US]: how coopd's
# guess at each frame of coop-bench-side's frame client (g) came out, per
# window (a window begins at the client's check frame, chk = 1: the frame
# thread starts one per row), joined by job id with coopd's trace
# (COOP_TRACE_FILE). For each window: its frames; those with no guess or
# a guess off by more than OFF_US (default 300) from the SUBMIT's arrival
# (the trace's `expected` against `recv`: outside a warm window of the
# default width); those taken by a spinning loop (`loop_spun`); those over
# 1.2x the window's p50 (release -> done); and its three slowest, each as
# its place in the window, its ms and its guess's error in ms ("none": no
# guess). bench/RESULTS.md, "A frame loop's phase moved".
set -eu
case "${1:-}" in -h | --help) sed -n '2,12p' "$0"; exit 0 ;; esac
[ $# -ge 2 ] && [ $# -le 3 ] && [ -r "$1" ] && [ -r "$2" ] ||
  { echo "usage: bench/frame_guess.sh CLIENT.csv COOPD_TRACE.csv [OFF_US] (--help)" >&2; exit 2; }
case "${3:-300}" in '' | *[!0-9]*) echo "frame_guess.sh: OFF_US must be a number of microseconds" >&2; exit 2 ;; esac
awk -F, -v off_us="${3:-300}" '
  FNR == 1 { file++ }
  file == 1 && $1 == "id" { for (i = 1; i <= NF; i++) cc[$i] = i; next }
  file == 1 {
    n1++; id[n1] = $1; chk[n1] = $cc["chk"]; lat[n1] = ($cc["done"] - $cc["release"]) / 1e6
    next
  }
  $1 == "id" { for (i = 1; i <= NF; i++) dc[$i] = i; next }
  $1 !~ /^[0-9]+$/ || !("expected" in dc) { next }
  { exp_[$1] = $dc["expected"]; recv[$1] = $dc["recv"]; spun[$1] = $dc["loop_spun"] + 0 > 0; seen[$1] = 1 }
  function report(w, k,   i, j, t, p50, over, off, sp, s, e) {
    if (!k) return
    for (i = 1; i <= k; i++) v[i] = wl[i]
    for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    p50 = v[int((k + 1) / 2)]
    over = off = sp = 0
    for (i = 1; i <= k; i++) {
      if (wl[i] > 1.2 * p50) over++
      if (!wo[i]) off++
      if (ws[i]) sp++
    }
    printf "window %d: %d frames, p50 %.3f ms; guess off by more than %d us or none: %d; " \
           "taken by a spinning loop: %d; over 1.2x p50: %d; slowest:", w, k, p50, off_us, off, sp, over
    for (s = 1; s <= 3 && s <= k; s++) {
      j = 0
      for (i = 1; i <= k; i++) if (!done[i] && (!j || wl[i] > wl[j])) j = i
      done[j] = 1
      printf " #%d %.3f (%s)", j, wl[j], we[j]
    }
    printf "\n"
    delete done; delete v
  }
  END {
    for (i = 1; i <= n1; i++) {
      if (chk[i] == 1) { report(w, k); w++; k = 0; delete wl; delete wo; delete ws; delete we; continue }
      if (!(id[i] in seen)) { missing++; continue }
      k++; wl[k] = lat[i]; ws[k] = spun[id[i]]
      e = exp_[id[i]] + 0
      wo[k] = e > 0 && (e - recv[id[i]] < off_us * 1000 && recv[id[i]] - e < off_us * 1000)
      we[k] = e > 0 ? sprintf("%+.2f", (e - recv[id[i]]) / 1e6) : "none"
    }
    report(w, k)
    if (missing) printf "frames not in the trace: %d\n", missing
    if (!w) { print "frame_guess.sh: no check frame in " ARGV[1] > "/dev/stderr"; exit 1 }
  }' "$1" "$2"
