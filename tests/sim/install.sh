# make install PREFIX=DIR: binaries, the kubectl plugin link, man pages made from --help, bash
# and zsh completions that name every command and flag; make demo builds quietly.
. tests/sim/lib.inc
P="$TMP/prefix"
# under `make san` (GANGSCHED_SAN_OPT), a relink needs the same compiler flags as the objects
mk() {
    if [ -n "${GANGSCHED_SAN_OPT:-}" ]; then
        env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory OPT="$GANGSCHED_SAN_OPT" "$@"
    else
        env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory "$@"
    fi
}
mk -s install PREFIX="$P" BIN="$BIN" BUILD="$BUILD" >"$TMP/install.log" 2>&1 && ok "make install" ||
    { bad "make install: $(tail -5 "$TMP/install.log")"; finish; }
for f in bin/gangsched bin/gangctl bin/kubectl-gang bin/kubectl_complete-gang share/man/man1/gangsched.1 share/man/man1/gangctl.1 \
    share/bash-completion/completions/gangctl share/bash-completion/completions/kubectl-gang \
    share/zsh/site-functions/_gangctl share/bash-completion/completions/gangsched share/zsh/site-functions/_gangsched; do
    [ -e "$P/$f" ] && ok "installed $f" || bad "missing $f"
done
"$P/bin/kubectl-gang" --version | grep -q '^kubectl gang [0-9]' && ok "kubectl-gang link" || bad "kubectl-gang link"
# kubectl's plugin completion: the real kubectl asks kubectl_complete-gang
if command -v kubectl >/dev/null; then
    PATH="$P/bin:$PATH" kubectl __complete gang qu 2>/dev/null >"$TMP/kc.txt"
    expect_eq "kubectl __complete gang qu" "$(cut -f1 "$TMP/kc.txt" | tr '\n' ' ')" "quota queues queue :4 "
    PATH="$P/bin:$PATH" kubectl __complete gang jobs -o '' 2>/dev/null >"$TMP/kc2.txt"
    expect_eq "kubectl __complete gang jobs -o" "$(tr '\n' ' ' <"$TMP/kc2.txt")" "table wide json yaml :4 "
else
    bad "kubectl not installed (make deps installs it)"
fi
"$P/bin/gangsched" version | grep -q '^gangsched [0-9]' && ok "installed gangsched runs" || bad "installed gangsched"
# man pages: the --help texts, in roff
M="$P/share/man/man1"
head -1 "$M/gangctl.1" | grep -q '^\.TH GANGCTL 1 "" "gangsched [0-9.]*" "User Commands"$' && ok "gangctl.1 header" || bad "gangctl.1: $(head -1 "$M/gangctl.1")"
for c in quota queues jobs explain top reservations queue reserve checkpoint completion; do
    grep -q "^\.SS $c$" "$M/gangctl.1" && ok "gangctl.1: $c" || bad "gangctl.1 lacks $c"
done
line=$("$BIN/gangctl" jobs --help | sed -n 4p)
grep -q -F -- "$line" "$M/gangctl.1" && ok "gangctl.1 has the jobs --help text" || bad "gangctl.1 differs from --help: $line"
for c in simulate run serve config store; do
    grep -q "^\.SS $c$" "$M/gangsched.1" && ok "gangsched.1: $c" || bad "gangsched.1 lacks $c"
done
grep -q -e '--tolerate LIST' "$M/gangsched.1" && ok "gangsched.1 has simulate's flags" || bad "gangsched.1 flags"
if command -v man >/dev/null && MANWIDTH=100 man -l "$M/gangctl.1" >"$TMP/man.txt" 2>/dev/null; then
    grep -q 'REASON' "$TMP/man.txt" && ok "man -l renders gangctl.1" || bad "man -l output"
fi
# bash completion: commands, sub-commands, flag values; every flag of --help
B="$P/share/bash-completion/completions/gangctl"
comp() { bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gangctl; echo "${COMPREPLY[*]}"' sh "$B" "$@"; }
expect_eq "complete 'gangctl qu'" "$(comp gangctl qu)" "quota queues queue"
expect_eq "complete 'gangctl queue '" "$(comp gangctl queue '')" "hold resume drain"
expect_eq "complete 'gangctl -o '" "$(comp gangctl -o '')" "table wide json yaml"
expect_eq "complete 'gangctl jobs --no-h'" "$(comp gangctl jobs --no-h)" "--no-headers"
for f in $("$BIN/gangctl" --help | grep -o -e '--[a-z-]*' | sort -u) -o -q -A -w -h; do
    grep -q -e " $f[ \"]" "$B" && ok "bash completion knows $f" || bad "bash completion lacks $f"
    grep -q -e "'$f\[" "$P/share/zsh/site-functions/_gangctl" && ok "zsh completion knows $f" || bad "zsh completion lacks $f"
done
Z="$P/share/zsh/site-functions/_gangctl"
head -1 "$Z" | grep -q '^#compdef gangctl kubectl-gang$' && ok "zsh #compdef" || bad "zsh header"
if command -v zsh >/dev/null; then zsh -n "$Z" && ok "zsh syntax" || bad "zsh syntax"
else bash -n "$Z" && ok "zsh script quoting (bash -n; zsh not installed)" || bad "zsh script quoting"; fi
expect_fail "completion for another shell" 2 "unknown shell" -- "$BIN/gangctl" completion fish
# gangsched's completion asks gangsched --help at completion time
GB="$P/share/bash-completion/completions/gangsched"
gcomp() { PATH="$P/bin:$PATH" bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gangsched; echo "${COMPREPLY[*]}"' sh "$GB" "$@"; }
expect_eq "complete 'gangsched s'" "$(gcomp gangsched s)" "simulate store serve"
expect_eq "complete 'gangsched simulate --tol'" "$(gcomp gangsched simulate --tol)" "--tolerate"
expect_eq "complete 'gangsched config '" "$(gcomp gangsched config '')" "check import-kueue"
expect_eq "complete 'gangsched simulate --policy '" "$(gcomp gangsched simulate --policy '')" "gangsched fifo ckpt-blind"
bash -n "$P/share/zsh/site-functions/_gangsched" && ok "_gangsched quoting" || bad "_gangsched quoting"
# make demo: no compiler lines, the simulation's table
mk demo BIN="$TMP/demo-bin" BUILD="$BUILD" >"$TMP/demo.log" 2>&1 || bad "make demo failed: $(tail -5 "$TMP/demo.log")"
grep -q -E '(^| )(gcc|cc|clang|ar|ln) ' "$TMP/demo.log" && bad "make demo printed build commands: $(grep -E '(gcc|cc|ar) ' "$TMP/demo.log" | head -2)" ||
    ok "make demo: no compiler lines"
grep -q '^metric  *gangsched  *fifo$' "$TMP/demo.log" && ok "make demo: the table" || bad "make demo output: $(head -5 "$TMP/demo.log")"
finish
