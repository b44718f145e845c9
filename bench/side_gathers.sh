#!/bin/sh
# bench/side_gathers.sh [--over US] CSV...: the gathers of the coop
# setups in coop-bench-side's CSV files (--csv FILE), one line per file
# and setup: tasks (those the bench counts: released during a run of the
# long kernel), gather p50 and p99 in us, then every gather over US
# (default 150) with where its task started in the long kernel's runs
# ("+ms of ms" inside a run, or "gap" between two), and the long kernel's
# runs over 1.5x their median (a slow run slows every frame beside it).
# bench/RESULTS.md, "The reap handed to the helpers", counts them so.
set -eu
over=150
case "${1:-}" in
  --over) over=$2; shift 2 ;;
  -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -ge 1 ] || { echo "usage: bench/side_gathers.sh [--over US] SIDE.csv..." >&2; exit 2; }
for f in "$@"; do
  [ -r "$f" ] || { echo "side_gathers.sh: cannot read $f" >&2; exit 2; }
  grep -v '^#' "$f" | awk -F, -v over="$over" -v file="$f" '
    $1 == "setup" { for (i = 1; i <= NF; i++) col[$i] = i; next }
    !("gather_ns" in col) { next }
    {
      s = $1 " K=" $2
      if ($col["kind"] == "run") {
        nr[s]++; rs[s, nr[s]] = $col["start_ns"]; rt[s, nr[s]] = $col["time_ns"]
      } else if ($col["kind"] == "task" && $col["gather_ns"] != "" &&
                 (!("counted" in col) || $col["counted"] == 1)) {
        nt[s]++; g[s, nt[s]] = $col["gather_ns"] / 1000; ts[s, nt[s]] = $col["start_ns"]
        seen[s] = 1
      }
    }
    function sortn(a, n,    i, j, v) {
      for (i = 2; i <= n; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
    }
    # nearest rank, as the bench (bench/common.c, quantile)
    function q(a, n, p,    k) { k = p * n; k = (k == int(k)) ? k : int(k) + 1; return a[k ? k : 1] }
    END {
      for (s in seen) {
        n = nt[s]
        for (i = 1; i <= n; i++) v[i] = g[s, i]
        sortn(v, n)
        printf "%s %s: %d tasks, gather p50 %.0f us, p99 %.0f us\n", file, s, n, q(v, n, 0.5), q(v, n, 0.99)
        m = nr[s]
        for (i = 1; i <= m; i++) w[i] = rt[s, i]
        sortn(w, m)
        med = m ? q(w, m, 0.5) : 0
        for (i = 1; i <= n; i++) {
          if (g[s, i] <= over) continue
          where = "gap"
          for (r = 1; r <= m; r++)
            if (ts[s, i] >= rs[s, r] && ts[s, i] <= rs[s, r] + rt[s, r])
              where = sprintf("+%.2f of %.1f ms", (ts[s, i] - rs[s, r]) / 1e6, rt[s, r] / 1e6)
          printf "  gather %.0f us, task %d, in run %s\n", g[s, i], i, where
        }
        for (r = 1; r <= m; r++)
          if (med > 0 && rt[s, r] > 1.5 * med)
            printf "  long kernel run %d: %.1f ms (median %.1f)\n", r, rt[s, r] / 1e6, med / 1e6
      }
    }'
done
