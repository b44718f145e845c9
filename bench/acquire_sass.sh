#!/usr/bin/env bash
# bench/acquire_sass.sh: what a device-scope acquire load, a relaxed load
# plus one acquire fence, and a relaxed load plus fence.acquire.gpu (PTX
# 8.6, sm_90) compile to on an NVIDIA GPU (bench/HISTORY.md, "Spins that
# keep L1"; bench/RESULTS.md, "A light acquire fence"): three spin kernels
# built with nvcc -cubin, then the memory instructions of their SASS
# (CCTL.IVALL: the SM's L1 invalidated).
#   bench/acquire_sass.sh [sm_XX]     (default sm_90; needs nvcc and cuobjdump)
set -euo pipefail
arch=${1:-sm_90}
case "$arch" in -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
for t in nvcc cuobjdump; do
  command -v "$t" > /dev/null || { echo "acquire_sass.sh: no $t in PATH" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/k.cu" <<'CU'
extern "C" __global__ void acq(unsigned *p, unsigned *o) {
  unsigned v;
  do v = __nv_atomic_load_n(p, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE); while (v == 0);
  o[threadIdx.x] = v;
}
extern "C" __global__ void rlx(unsigned *p, unsigned *o) {
  unsigned v;
  do v = __nv_atomic_load_n(p, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE); while (v == 0);
  __nv_atomic_thread_fence(__NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE);
  o[threadIdx.x] = v;
}
extern "C" __global__ void light(unsigned *p, unsigned *o) {
  unsigned v;
  do v = __nv_atomic_load_n(p, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE); while (v == 0);
  asm volatile("fence.acquire.gpu;" ::: "memory");
  o[threadIdx.x] = v;
}
CU
nvcc -cubin -arch="$arch" -o "$tmp/k.cubin" "$tmp/k.cu"
cuobjdump -sass "$tmp/k.cubin" | grep -E "Function|LDG|CCTL|MEMBAR|FENCE|ERRBAR|BRA"
