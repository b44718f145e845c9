#!/bin/bash
# completion.sh: coopctl's bash completion (completions/coopctl.bash) offers
# every command `coopctl --help` lists and no other, completes a command's
# options and a prefix; the zsh one names the same commands.
#
# usage: completion.sh COOPCTL COMPLETIONS_DIR
set -u
coopctl=$1 comp=$2
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
# shellcheck disable=SC1091
. "$comp/coopctl.bash"

complete_words() { # the words completed for the command line "$@" (the last word is partial)
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _coopctl
  echo "${COMPREPLY[*]}"
}

listed=$("$coopctl" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p' | sort | tr '\n' ' ')
offered=$(complete_words coopctl "" | tr ' ' '\n' | grep -v '^help$' | sort | tr '\n' ' ')
[ -n "$listed" ] || fail "no commands in coopctl --help"
[ "$listed" = "$offered" ] || fail "coopctl --help lists [$listed], bash completes [$offered]"
for c in $listed; do
  grep -q "'$c:" "$comp/_coopctl" || fail "zsh completion lacks $c"
done
got=$(complete_words coopctl sta)
[ "$got" = "status stats" ] || fail "sta -> [$got]"
got=$(complete_words coopctl --json submit --w)
[ "$got" = "--wg --wait" ] || fail "submit --w -> [$got]"
got=$(complete_words coopctl render --class h)
[ "$got" = "heavy" ] || fail "render --class h -> [$got]"
# every option coopctl COMMAND --help names is completed
for c in submit wait top metrics render app; do
  opts=$(complete_words coopctl "$c" --)
  for o in $("$coopctl" "$c" --help | head -1 | grep -o -- '--[a-z-]*' | sort -u); do
    case " $opts " in *" $o "*) ;; *) fail "$c: $o not completed" ;; esac
  done
done
echo "$fails failures"
[ "$fails" -eq 0 ]
