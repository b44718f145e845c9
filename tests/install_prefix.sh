#!/bin/sh
# install_prefix.sh BUILD_DIR SOURCE_DIR [PYTHON PYTHON_DIR]
# (docs/daemon.md, "Installing"). Installs the build to a temporary
# prefix, moves the tree (the install must be relocatable), builds a small
# client against it with pkg-config and with find_package (shared and
# static), and runs each against a coopd from the moved prefix started
# without --kernels: it must serve the installed kernels. With PYTHON (and
# PYTHON_DIR, the Python package's directory under the prefix), the
# installed coop Python package too: it must find the prefix's libcoop by
# itself. The old install failed each step: coop.pc said /usr/local, there
# was no CMake package nor libcoop.a, and coopd looked in /usr/local.
# COOP_TEST_CFLAGS (the clients' compile and link flags) and
# COOP_TEST_PY_ENV (Python's environment): set by ctest for a sanitized
# build (tests/CMakeLists.txt).
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
python=${3:-} pydir=${4:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/coop-install-XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "install_prefix: $*" >&2
  [ -f "$tmp/coopd.log" ] && sed 's/^/  coopd: /' "$tmp/coopd.log" >&2
  exit 1
}

cmake --install "$build" --prefix "$tmp/first" >"$tmp/install.log" || fail "cmake --install failed"
mv "$tmp/first" "$tmp/p"
p=$tmp/p
for f in lib/libcoop.a lib/libcoop.so lib/pkgconfig/coop.pc lib/cmake/coop/coopConfig.cmake \
  lib/cmake/coop/coopConfigVersion.cmake include/coop.h sbin/coopd share/coop/kernels/sweep.cl \
  lib/systemd/system/coopd.service lib/systemd/system/coop.socket lib/sysusers.d/coop.conf \
  include/coop/kernel/coop_kernel.h include/coop/kernel/api.h include/coop/kernel/dialect.h \
  include/coop/kernel/shared.h include/coop/kernel/coop_limits.h include/coop/kernel/barrier.cl \
  include/coop/kernel/taskqueue.cl share/doc/coop/kernels.md share/man/man7/coop-kernels.7; do
  [ -e "$p/$f" ] || fail "not installed: $f"
done
# the unit names the install's coopd and settings
grep -q "^ExecStart=$tmp/first/sbin/coopd --config $tmp/first/etc/coop/coopd.ini " \
  "$p/lib/systemd/system/coopd.service" || fail "coopd.service: ExecStart not the prefix's"

# /usr (a package's DESTDIR install): the settings in /etc/coop, where the
# unit's --config names them; they went to /usr/etc/coop, and the unit
# failed to start on a missing /etc/coop/coopd.ini
DESTDIR="$tmp/dest" cmake --install "$build" --prefix /usr >"$tmp/install-usr.log" ||
  fail "cmake --install --prefix /usr failed"
grep -q "^ExecStart=/usr/sbin/coopd --config /etc/coop/coopd.ini " \
  "$tmp/dest/usr/lib/systemd/system/coopd.service" || fail "/usr: ExecStart not /usr's"
[ -f "$tmp/dest/etc/coop/coopd.ini" ] || fail "/usr: /etc/coop/coopd.ini not installed"
[ ! -e "$tmp/dest/usr/etc" ] || fail "/usr: settings installed in /usr/etc"
rm -rf "$tmp/dest"

# the kernel SDK: a shipped kernel checks against the installed headers
# alone, and an error in one names its file and line (docs/kernels.md)
if command -v clang >/dev/null; then
  sdk="clang -x cl -cl-std=CL3.0 -Xclang -finclude-default-header -fsyntax-only -I$p/include"
  $sdk -include coop/kernel/coop_kernel.h "$src/kernels/apps/bfs.cl" ||
    fail "bfs.cl does not check against the installed kernel headers"
  printf '//@coop name=k kind=noncooperative args=u32\nvoid k(struct coop_ctx *c) {\n  coop_u32 x = nope;\n}\n' >"$tmp/k.cl"
  if $sdk -include coop/kernel/coop_kernel.h "$tmp/k.cl" 2>"$tmp/sdk.err"; then fail "a bad kernel checks"; fi
  grep -q "k.cl:3:" "$tmp/sdk.err" || fail "the SDK check does not name k.cl:3: $(cat "$tmp/sdk.err")"
fi

# pkg-config, from the moved tree
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
pkg-config --exists coop || fail "pkg-config does not find coop"
libdir=$(pkg-config --variable=libdir coop)
[ "$(cd "$libdir" && pwd -P)" = "$(cd "$p/lib" && pwd -P)" ] || fail "coop.pc libdir is $libdir"
# shellcheck disable=SC2046,SC2086 # pkg-config's words; COOP_TEST_CFLAGS: none or some
cc -o "$tmp/client_pc" "$src/tests/install_client/client.c" $(pkg-config --cflags --libs coop) \
  ${COOP_TEST_CFLAGS:-} -Wl,-rpath,"$libdir" || fail "cannot build with pkg-config"

# find_package(coop), from the moved tree
cmake -S "$src/tests/install_client" -B "$tmp/fp" -DCMAKE_PREFIX_PATH="$p" \
  -DCMAKE_C_FLAGS="${COOP_TEST_CFLAGS:-}" -DCMAKE_BUILD_TYPE=Release >"$tmp/fp.log" 2>&1 || { cat "$tmp/fp.log" >&2; fail "find_package(coop) failed"; }
cmake --build "$tmp/fp" >>"$tmp/fp.log" 2>&1 || { cat "$tmp/fp.log" >&2; fail "cannot build with find_package"; }
readelf -d "$tmp/fp/client_shared" | grep -q 'NEEDED.*libcoop\.so' || fail "client_shared: libcoop.so not linked"
if readelf -d "$tmp/fp/client_static" | grep -q 'libcoop'; then fail "client_static links libcoop.so"; fi

# coopd from the moved prefix, no --kernels: the kernels beside it
mkdir "$tmp/run"
export COOP_SOCKET="$tmp/run/coop.sock"
"$p/sbin/coopd" --socket "$COOP_SOCKET" --log-level info 2>"$tmp/coopd.log" &
pid=$!
i=0
while [ ! -S "$COOP_SOCKET" ]; do
  kill -0 "$pid" 2>/dev/null || fail "coopd exited at start"
  i=$((i + 1))
  [ $i -lt 600 ] || fail "coopd did not listen within 60 s"
  sleep 0.1
done
# no --config: the settings installed beside it (it read none before)
sed -i 's/^max_clients = 64$/max_clients = 7/' "$p/etc/coop/coopd.ini"
"$p/sbin/coopd" --check-config --socket "$COOP_SOCKET.x" >"$tmp/check.out" || fail "--check-config failed"
grep -q "max_clients=7 " "$tmp/check.out" ||
  fail "coopd does not read the prefix's etc/coop/coopd.ini: $(grep max_clients= "$tmp/check.out")"
grep -q "dirs=$(cd "$p" && pwd -P)/share/coop/kernels\$" "$tmp/check.out" ||
  fail "coopd does not use the prefix's kernels: $(grep dirs= "$tmp/check.out")"
for c in "$tmp/client_pc" "$tmp/fp/client_shared" "$tmp/fp/client_static"; do
  "$c" sweep >"$tmp/client.out" 2>&1 || { cat "$tmp/client.out" >&2; fail "$(basename "$c") failed"; }
  grep -q "^kernel bfs$" "$tmp/client.out" || fail "$(basename "$c"): the applications' kernels are missing"
done
"$p/bin/coopctl" kernels >"$tmp/coopctl.out" 2>&1 || { cat "$tmp/coopctl.out" >&2; fail "the prefix's coopctl failed"; }
grep -q sweep "$tmp/coopctl.out" || fail "coopctl kernels: no sweep"
if [ -n "$python" ]; then
  [ -e "$p/$pydir/coop/__init__.py" ] || fail "not installed: $pydir/coop/__init__.py"
  [ -e "$p/$pydir/coop/_capi.py" ] || fail "not installed: $pydir/coop/_capi.py"
  if "$python" -c 'import numpy' 2>/dev/null; then
    # shellcheck disable=SC2086 # COOP_TEST_PY_ENV: assignments, one a word
    env -u COOP_LIBRARY ${COOP_TEST_PY_ENV:-} PYTHONPATH="$p/$pydir" "$python" -c '
import sys, numpy as np, coop
assert coop.__file__.startswith(sys.argv[1]), coop.__file__
a = np.zeros(256, np.uint32)
coop.connect().run("sweep", a, np.uint32(256), np.uint32(2), cooperative=True)
assert (a == 2).all(), a
' "$p/" >"$tmp/python.out" 2>&1 || { cat "$tmp/python.out" >&2; fail "the installed Python package failed"; }
    # A copy of the package outside an install layout (a checkout) looks in
    # no folder above it: it looked six up, so that a checkout under /tmp
    # loaded /tmp/lib/libcoop.so.0, anyone's, as it was imported. Here that
    # folder holds an empty file, which would fail the import if loaded;
    # the linker's search finds the prefix's library instead.
    mkdir -p "$tmp/up/lib" "$tmp/up/a/b" && : >"$tmp/up/lib/libcoop.so.0" &&
      cp -r "$p/$pydir/coop" "$tmp/up/a/b/" || fail "cannot lay out the copy"
    # shellcheck disable=SC2086 # as above
    env -u COOP_LIBRARY ${COOP_TEST_PY_ENV:-} LD_LIBRARY_PATH="$p/lib" PYTHONPATH="$tmp/up/a/b" \
      "$python" -c 'import coop, sys; print(coop.__file__)' >"$tmp/up.out" 2>&1 ||
      { cat "$tmp/up.out" >&2; fail "a copy of the package loaded a library from a folder above it"; }
    # The prefix's own library refused (its folder writable by its group)
    # is said, naming why, not passed over in silence.
    chmod g+w "$p/lib" || fail "cannot chmod $p/lib"
    # shellcheck disable=SC2086 # as above
    env -u COOP_LIBRARY ${COOP_TEST_PY_ENV:-} PYTHONPATH="$p/$pydir" \
      "$python" -c 'import coop' >"$tmp/distrust.out" 2>&1 || : # the linker may find none
    chmod g-w "$p/lib"
    grep -q "not loading $p/lib/libcoop.so.0: $p/lib is writable by its group" "$tmp/distrust.out" ||
      { cat "$tmp/distrust.out" >&2; fail "a refused library of the prefix was passed over in silence"; }
  else
    echo "install_prefix: $python cannot import numpy: the Python package not run"
  fi
fi
kill "$pid"
wait "$pid" || fail "coopd did not stop cleanly"
pid=
echo "install_prefix: ok ($p)"
