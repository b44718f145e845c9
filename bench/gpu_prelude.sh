# shellcheck shell=bash
# gpu_prelude.sh: the start of every bench/*_gpu.sh batch, sourced from
# the repository root on the GPU machine:
#
#   . "$(dirname "$0")/gpu_prelude.sh" "${1:-}"   # the batch's DIR argument, or ""
#
# (an argument always: sourced without one, it would see the batch's own).
# Sets out to DIR, else $OUT, else ./out, made and absolute; makes
# /work/main, where build-cuda was configured (its binaries and ctest files
# name paths under it), a link to this tree where the machine has none, and
# goes there; exports the shared libraries of .devlibs/ and the CUDA
# backend; names the GPUs.
out=${1:-${OUT:-$PWD/out}}
mkdir -p "$out" /work || exit 1
out=$(cd "$out" && pwd)
[ -e /work/main ] || ln -s "$PWD" /work/main
cd /work/main || exit 1
export LD_LIBRARY_PATH=$PWD/.devlibs COOP_BACKEND=cuda
nvidia-smi -L
