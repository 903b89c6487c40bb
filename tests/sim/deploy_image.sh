# deploy/Dockerfile against the build (no container engine needed): the build stage installs
# exactly the Makefile's BUILD_DEBS, and the runtime stage every Debian package that provides
# a library bin/gangsched or bin/gangctl links directly (found with objdump, ldd and dpkg -S on
# this Debian machine, the image's base release), libc6 aside (in the base image) and the
# sanitizer runtimes of `make san`.
. tests/sim/lib.inc
DF=deploy/Dockerfile
# the packages of the apt-get install in stage N (1: build, 2: runtime)
stage_pkgs() {
    awk -v want="$1" '
        /^FROM / { stage++ }
        stage == want && /apt-get install/ { on = 1 }
        on { line = line " " $0 }
        on && /rm -rf \/var\/lib\/apt/ { on = 0 }
        END { print line }' "$DF" |
        tr ' \\' '\n\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' |
        grep -v -E '^(apt-get|install|rm|update|groupadd|useradd)$' | sort -u
}
stage_pkgs 1 >"$TMP/build"
stage_pkgs 2 >"$TMP/runtime"
[ -s "$TMP/build" ] && [ -s "$TMP/runtime" ] || { bad "cannot read the package lists of $DF"; finish; }
make -s -pnq -f Makefile 2>/dev/null | sed -n 's/^BUILD_DEBS := //p' | tr ' ' '\n' | grep . | sort -u >"$TMP/want"
[ -s "$TMP/want" ] || { bad "cannot read BUILD_DEBS from the Makefile"; finish; }
missing=$(comm -23 "$TMP/want" "$TMP/build" | tr '\n' ' ')
extra=$(comm -13 "$TMP/want" "$TMP/build" | tr '\n' ' ')
[ -z "$missing" ] && ok "build stage installs every BUILD_DEBS package" ||
    bad "build stage lacks: $missing"
[ -z "$extra" ] && ok "build stage installs nothing else" || bad "build stage installs more: $extra"
command -v objdump >/dev/null && command -v dpkg >/dev/null ||
    { bad "objdump or dpkg missing (binutils, dpkg)"; finish; }
for b in "$BIN/gangsched" "$BIN/gangctl"; do
    for lib in $(objdump -p "$b" | awk '/NEEDED/ { print $2 }'); do
        path=$(ldd "$b" | awk -v l="$lib" '$1 == l { print $3 }')
        [ -n "$path" ] || { bad "$b: cannot resolve $lib"; continue; }
        pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -n 1 | cut -d: -f1)
        [ -n "$pkg" ] || pkg=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)
        [ -n "$pkg" ] || { bad "$b: no package owns $path"; continue; }
        echo "$pkg"
    done
done | sort -u | grep -v -E '^(libc6|lib(asan|ubsan|lsan|tsan)[0-9]+)$' >"$TMP/linked"
for p in $(cat "$TMP/linked"); do
    grep -qx "$p" "$TMP/runtime" && ok "runtime stage installs $p (linked)" ||
        bad "runtime stage lacks $p, which provides a library the binaries link"
done
# ENTRYPOINT runs as the unprivileged user the Deployment expects
grep -q '^USER 65532:65532' "$DF" && grep -q 'runAsUser: 65532' deploy/deployment.yaml &&
    ok "image user = Deployment runAsUser" || bad "image user and Deployment runAsUser differ"
finish
