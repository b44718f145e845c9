# shellcheck shell=bash
# coopd_traced.sh: sourced by the bench scripts that run one coopd a run
# with COOP_TRACE_FILE set (rtt_ab_gpu.sh, rtt_builds_gpu.sh,
# frame_legs_gpu.sh):
#
#   coopd_traced COOPD KERNELS SOCK TRACE LOG [coopd options...]
#
# starts COOPD on SOCK with the kernels of KERNELS and KERNELS/probe, its
# trace into TRACE and its stderr into LOG, no journal, no parking and no
# watchdog; sets `daemon` to its pid; returns once the socket is there and
# a second more (the socket comes before the megakernel answers). If coopd
# dies first, its log goes to stderr and the script exits 1.
coopd_traced() {
  local coopd=$1 kern=$2 sock=$3 trace=$4 log=$5
  shift 5
  rm -f "$sock" "$trace"
  COOP_TRACE_FILE=$trace "$coopd" --socket "$sock" --kernels "$kern:$kern/probe" \
    --set server.journal=off --set device.park_ms=0 --set jobs.watchdog_ms=0 "$@" 2>"$log" &
  daemon=$!
  for _ in $(seq 1 1200); do
    [ -S "$sock" ] && break
    kill -0 "$daemon" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  sleep 1
}
