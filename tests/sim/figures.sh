# The figures of README.md and docs/*.md are what the programs print today: docs/figures.py and
# tests/bench/fairness.py regenerate each marked block and --check fails on any difference (run
# the scripts to update).
. tests/sim/lib.inc
BIN=$BIN python3 docs/figures.py --check >"$TMP/out" 2>&1 && ok "README and docs figures up to date" ||
    { bad "figures out of date (python3 docs/figures.py rewrites them):"; head -40 "$TMP/out"; }
BIN=$BIN python3 tests/bench/fairness.py --check >"$TMP/fair" 2>&1 &&
    ok "docs/simulator.md sharing-incentive figures up to date" ||
    { bad "fairness figures out of date (tests/bench/fairness.py --update-docs):"; head -40 "$TMP/fair"; }
# docs describe what is built: no "planned (issue N)" left about parts that exist
if grep -n -E '[Pp]lanned,? \(?issue [0-9]|\(planned, issue' README.md docs/*.md >"$TMP/planned"; then
    bad "docs still call built parts planned: $(head -3 "$TMP/planned")"
else
    ok "no 'planned (issue N)' in README and docs"
fi
finish
