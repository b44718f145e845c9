# bash completion for coopctl (installed as
# share/bash-completion/completions/coopctl)
# shellcheck disable=SC2207 # compgen prints words, one a line: COMPREPLY=($(...)) is the idiom
_coopctl() {
  local cur prev cmd i
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="kernels kernel reload submit status wait cancel migrate stats top metrics render app help"
  local global="--socket --json --help --version"
  cmd=
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --socket) ((i++)) ;;
      -*) ;;
      *) cmd=${COMP_WORDS[i]}; break ;;
    esac
  done
  case $prev in
    --socket | --out | --graph) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --class) COMPREPLY=($(compgen -W "light medium heavy" -- "$cur")); return ;;
    --graph-format) COMPREPLY=($(compgen -W "auto dimacs mtx edges" -- "$cur")); return ;;
  esac
  if [[ -z $cmd ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$global" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    fi
    return
  fi
  local opts=
  case $cmd in
    submit) opts="--wg --coop --query-barrier --period --count --duration --deadline --device --priority --wait --timeout" ;;
    wait | reload | migrate) opts="--timeout" ;;
    kernel)
      opts="--timeout"
      if [[ $cur != -* ]]; then
        if ((COMP_CWORD == i + 1)); then
          COMPREPLY=($(compgen -W "add remove" -- "$cur"))
        elif [[ ${COMP_WORDS[i + 1]} == add ]]; then
          COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
      fi ;;
    top) opts="--interval --iterations --device" ;;
    metrics) opts="--out" ;;
    render) opts="--class --wg --period --duration --for --size --device" ;;
    app) opts="--list --graph --graph-format --gen --scale --input --source --sources --groups --device --query-barrier --original --out --binary --check --timeout" ;;
    help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts --help --json --socket" -- "$cur"))
  elif [[ $cmd == submit && $cur == *:* ]]; then
    COMPREPLY=($(compgen -f -- "${cur#*:}" | sed "s|^|${cur%%:*}:|"))
  elif [[ $cmd == app ]]; then
    COMPREPLY=($(compgen -W "bfs l-sssp bc color mis p-sssp octree game" -- "$cur"))
  fi
}
complete -F _coopctl coopctl
