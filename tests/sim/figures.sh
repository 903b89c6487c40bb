# The figures of README.md and docs/cli.md are what the programs print today: docs/figures.py
# regenerates each marked block and --check fails on any difference (run the script to update).
. tests/sim/lib.inc
BIN=$BIN python3 docs/figures.py --check >"$TMP/out" 2>&1 && ok "README and docs figures up to date" ||
    { bad "figures out of date (python3 docs/figures.py rewrites them):"; head -40 "$TMP/out"; }
# docs describe what is built: no "planned (issue N)" left about parts that exist
if grep -n -E '[Pp]lanned,? \(?issue [0-9]|\(planned, issue' README.md docs/*.md >"$TMP/planned"; then
    bad "docs still call built parts planned: $(head -3 "$TMP/planned")"
else
    ok "no 'planned (issue N)' in README and docs"
fi
finish
