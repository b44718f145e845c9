#!/bin/sh
# kernel_errors.sh CASE COOPD [EMIT_SOURCE NVRTC_COMPILE]: a kernel that
# does not build is reported at its author's file and line, never at a line
# of the generated megakernel source (docs/kernels.md, "Errors"). Each CASE
# writes a kernel directory with one mistake, runs coopd --check-config on
# it (PoCL compiles), and checks that it fails with FILE:LINE: naming the
# file and the line of the mistake (a case at a limit or a corner of the
# rules, long_name and len_arg, checks that its kernel builds instead). Where a compiler reports it (a helper
# defined twice, a compile error), NVRTC is checked too when given: it
# writes FILE(LINE).
set -u
case=$1 coopd=$2 emit=${3:-} nvrtc=${4:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/coop-kerr-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/k"
k=$dir/k
nv=
st_want=1 # coopd --check-config's exit status; 0 where the case is a kernel that builds
case $case in
missing_step) # the glue calls nostep_step: today a line of coop-megakernel.cl
  cat >"$k/nostep.cl" <<'CL'
//@coop name=nostep kind=cooperative args=u32
struct nostep_state {
  coop_u32 x;
};
void nostep_init(struct coop_ctx *c, struct nostep_state *s) { s->x = 0u; }
/* coop_u32 nostep_step(...) { } in a comment is no definition */
CL
  want='nostep\.cl:1: cooperative kernel "nostep" defines no nostep_step: coop_u32 nostep_step(struct coop_ctx \*c, struct nostep_state \*s)'
  ;;
missing_init)
  cat >"$k/noinit.cl" <<'CL'
//@coop name=noinit kind=cooperative args=u32
struct noinit_state {
  coop_u32 x;
};
coop_u32 noinit_step(struct coop_ctx *c, struct noinit_state *s) { return COOP_DONE; }
CL
  want='noinit\.cl:1: cooperative kernel "noinit" defines no noinit_init'
  ;;
missing_state)
  cat >"$k/nostate.cl" <<'CL'
//@coop name=nostate kind=cooperative args=u32
void nostate_init(struct coop_ctx *c, struct nostate_state *s) {}
coop_u32 nostate_step(struct coop_ctx *c, struct nostate_state *s) { return COOP_DONE; }
CL
  want='nostate\.cl:1: cooperative kernel "nostate" defines no struct nostate_state'
  ;;
missing_function) # a step where the kind says noncooperative
  cat >"$k/plain.cl" <<'CL'
//@coop name=plain kind=noncooperative args=u32
struct plain_state {
  coop_u32 x;
};
void plain_init(struct coop_ctx *c, struct plain_state *s) {}
coop_u32 plain_step(struct coop_ctx *c, struct plain_state *s) { return COOP_DONE; }
CL
  want='plain\.cl:1: noncooperative kernel "plain" defines no plain: void plain(struct coop_ctx \*c) { ... } (it defines a step: kind=cooperative?)'
  ;;
name_clash) # two files, one kernel name
  printf '//@coop name=twice kind=noncooperative args=u32\nvoid twice(struct coop_ctx *c) {}\n' >"$k/a.cl"
  printf '//@coop name=twice kind=noncooperative args=u32\nvoid twice(struct coop_ctx *c) {}\n' >"$k/b.cl"
  want='b\.cl:1: kernel "twice" already defined in .*a\.cl:1'
  ;;
helper_clash) # two kernels, one helper name: the second definition's line
  cat >"$k/a.cl" <<'CL'
//@coop name=ka kind=noncooperative args=u32
/* a helper without the kernel's prefix */
coop_u32 helper(coop_u32 x) { return x + 1u; }
void ka(struct coop_ctx *c) {}
CL
  cat >"$k/b.cl" <<'CL'
//@coop name=kb kind=noncooperative args=u32


/* the same name */
coop_u32 helper(coop_u32 x) { return x + 2u; }
void kb(struct coop_ctx *c) {}
CL
  # coopd finds it before a compiler does (it was the compiler's
  # "b.cl:5:10: redefinition of 'helper'"), and names the other
  want='b\.cl:5: redefinition of .helper.: kernel ka defines a function of that name at .*a\.cl:3'
  nv='b\.cl(5): error: function "helper" has already been defined'
  ;;
runtime_clash) # a helper of a name the runtime's code after the kernels defines
  cat >"$k/rt.cl" <<'CL'
//@coop name=rt kind=noncooperative args=u32

coop_u32 coop__dispatch(coop_u32 k) { return k; }
void rt(struct coop_ctx *c) {}
CL
  want='rt\.cl:3: redefinition of .coop__dispatch.: the runtime defines a function of that name'
  ;;
compile_error)
  cat >"$k/bad.cl" <<'CL'
//@coop name=bad kind=noncooperative args=u32
/* line 2 */
void bad(struct coop_ctx *c) {
  coop_u32 x = undefined_thing + 1;
}
CL
  want='bad\.cl:4:[0-9]*:* .*undefined_thing'
  nv='bad\.cl(4): error: identifier "undefined_thing" is undefined'
  ;;
bad_directive)
  printf '//@coop name=bd kind=noncooperative args=u32 colour=red\nvoid bd(struct coop_ctx *c) {}\n' >"$k/bd.cl"
  want='bd\.cl:1: unknown key "colour"'
  ;;
bad_elem) # an element type that is none of the ten
  printf '//@coop name=be kind=noncooperative args=a:buf<f16>\nvoid be(struct coop_ctx *c) {}\n' >"$k/be.cl"
  want='be\.cl:1: unknown element type in "buf<f16>" (buf<T>: T one of u8, '
  ;;
long_directive) # past the line's 511 bytes after "//@coop ": it was cut there, unsaid, and
  # the last argument's buf<f32> read as a plain buf
  a=
  for i in 00 01 02 03 04 05 06 07 08 09 10 11 12; do a="${a}nnnnnnnnnnnnnnnnnnnnnnnnnnnnn$i:u32,"; done
  printf '//@coop name=ld kind=noncooperative args=%sxxxxxx:buf<f32>\nvoid ld(struct coop_ctx *c) {}\n' "$a" >"$k/ld.cl"
  want='ld\.cl:1: the directive is too long: 516 bytes after "//@coop ", at most 511'
  ;;
bad_require) # the second rule, on line 3, does not parse
  cat >"$k/br.cl" <<'CL'
//@coop name=br kind=noncooperative args=n:u32,a:buf
//@coop require n*4 <= len(a)
//@coop require n*4 <= len(b
void br(struct coop_ctx *c) {}
CL
  want='br\.cl:3: require "n\*4 <= len(b": '
  ;;
state_too_large) # a state struct past COOP_TRANSMIT_BYTES (256): at the directive's line
  cat >"$k/big.cl" <<'CL'
//@coop name=big kind=cooperative args=u32
struct big_state {
  coop_u32 a[65];
};
void big_init(struct coop_ctx *c, struct big_state *s) { s->a[0] = 0u; }
coop_u32 big_step(struct coop_ctx *c, struct big_state *s) { return COOP_DONE; }
CL
  want='big\.cl:1:[0-9]*:* .*big_state_is_larger_than_COOP_TRANSMIT_BYTES'
  nv='big\.cl(1): error: .*'
  ;;
arg_index) # an accessor's index past args=: it compiled, and failed EFAULT at run time
  cat >"$k/argidx.cl" <<'CL'
//@coop name=argidx kind=noncooperative args=out:buf,n:u32
void argidx(struct coop_ctx *c) {
  coop_buf_u32 out = coop_arg_buf_u32(c, 0);
  coop_buf_u32 more = coop_arg_buf_u32(c, 5);
  coop_at(out, 0) = coop_at(more, 0);
}
CL
  want="argidx\.cl:4: coop_arg_buf_u32(\.\.\., 5): the directive's args= declares 2 arguments (0\.\.1)"
  ;;
arg_type) # a scalar read from a buffer's argument: it compiled, and read the buffer's offset
  cat >"$k/argty.cl" <<'CL'
//@coop name=argty kind=noncooperative args=out:buf,n:u32
void argty(struct coop_ctx *c) {
  coop_buf_u32 out = coop_arg_buf_u32(c, 0);
  coop_at(out, 0) = coop_arg_u32(c, 0u);
}
CL
  want='argty\.cl:4: coop_arg_u32(\.\.\., 0): argument 0 is buf in the directive, not u32'
  ;;
arg_elem) # a buffer declared buf<f32> read as u32: the bits of floats taken as integers
  cat >"$k/argel.cl" <<'CL'
//@coop name=argel kind=noncooperative args=out:buf<f32>,in:buf<u32>,n:u32
void argel(struct coop_ctx *c) {
  coop_buf_u32 in = coop_arg_buf_u32(c, 1);
  coop_buf_u32 out = coop_arg_buf_u32(c, 0);
  coop_at(out, 0) = coop_at(in, 0);
}
CL
  want='argel\.cl:4: coop_arg_buf_u32(\.\.\., 0): argument 0 is buf<f32> in the directive, not buf<u32>'
  ;;
too_many_functions) # one past the 4096 functions a kernel's source may define: their
  # list is kept while it is loaded, and a 256 KiB source of tiny helpers held
  # about 50000 (6.6 MB a kernel)
  {
    echo '//@coop name=many kind=noncooperative args=u32'
    i=0
    while [ $i -le 4096 ]; do
      echo "coop_u32 many_f$i(coop_u32 x) { return x; }"
      i=$((i + 1))
    done
    echo 'void many(struct coop_ctx *c) {}'
  } >"$k/many.cl"
  want="many\.cl:4098: function .many_f4096. is past the 4096 functions one kernel.s source may define"
  ;;
long_name) # a name of 63 bytes, the most the directive takes: it passed coopd's checks, and
  # the build then failed with "invalid argument" alone (the runtime took 47 at most)
  n=k12345678901234567890123456789012345678901234567890123456789012
  cat >"$k/long.cl" <<CL
//@coop name=$n kind=cooperative args=u32
struct ${n}_state {
  coop_u32 x;
};
void ${n}_init(struct coop_ctx *c, struct ${n}_state *s) { s->x = 0u; }
coop_u32 ${n}_step(struct coop_ctx *c, struct ${n}_state *s) { return COOP_DONE; }
CL
  st_want=0
  want='^kernels compile$'
  ;;
name_too_long) # 64 bytes: refused as "bad kernel name" alone, which did not say why
  n=k123456789012345678901234567890123456789012345678901234567890123
  printf '//@coop name=%s kind=noncooperative args=u32\nvoid %s(struct coop_ctx *c) {}\n' $n $n >"$k/ln.cl"
  want="ln\.cl:1: bad kernel name \"$n\": longer than 63 bytes"
  ;;
arg_name_too_long) # 32 bytes: "bad argument name" alone
  printf '//@coop name=an kind=noncooperative args=n2345678901234567890123456789012:u32\nvoid an(struct coop_ctx *c) {}\n' >"$k/an.cl"
  want='an\.cl:1: bad argument name "n2345678901234567890123456789012": longer than 31 bytes'
  ;;
len_arg) # a scalar named len in a rule, a blank after it: it was read as the function
  # len() ("len needs (NAME)"), where "len<=len(a)" was taken
  cat >"$k/la.cl" <<'CL'
//@coop name=la kind=noncooperative args=a:buf,len:u32
//@coop require len * 4 <= len (a)
void la(struct coop_ctx *c) {}
CL
  st_want=0
  want='^kernels compile$'
  ;;
*)
  echo "kernel_errors: no case $case"
  exit 2
  ;;
esac

fails=0
POCL_MAX_PTHREAD_COUNT=3 "$coopd" --kernels "$k" --socket "$dir/s" --check-config >"$dir/out" 2>&1
st=$?
if [ $st -ne $st_want ]; then
  echo "FAIL: coopd --check-config exited $st, expected $st_want"
  fails=$((fails + 1))
elif ! grep -q -- "$want" "$dir/out"; then
  echo "FAIL: no \"$want\" in coopd's message"
  fails=$((fails + 1))
elif grep -q 'coop-megakernel\.cl' "$dir/out"; then
  echo "FAIL: the message names the generated source"
  fails=$((fails + 1))
else
  echo "ok (PoCL): $(grep -- "$want" "$dir/out")"
fi
[ $fails -eq 0 ] || sed 's/^/    /' "$dir/out"
if [ -n "$nv" ] && [ -n "$nvrtc" ]; then
  "$emit" "$k"/*.cl | "$nvrtc" >"$dir/nv" 2>&1
  if ! grep -q -- "$nv" "$dir/nv"; then
    echo "FAIL: no \"$nv\" in NVRTC's log:"
    sed 's/^/    /' "$dir/nv"
    fails=$((fails + 1))
  else
    echo "ok (NVRTC): $(grep -- "$nv" "$dir/nv")"
  fi
fi
[ $fails -eq 0 ]
