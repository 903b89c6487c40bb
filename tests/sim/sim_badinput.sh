# Bad input gets a clear error naming the place, and a non-zero exit (2 usage, 1 input).
. tests/sim/lib.inc
expect_fail "unknown flag" 2 "unknown flag '--bogus'" -- "$GS" simulate --bogus
expect_fail "flag without value" 2 "needs a value" -- "$GS" simulate --trace
expect_fail "unknown policy" 2 "unknown policy 'nope'" -- "$GS" simulate --policy nope
expect_fail "cluster and nodes" 2 "not both" -- "$GS" simulate --cluster hgx:1 --nodes x.yaml
expect_fail "unknown command" 2 "unknown command" -- "$GS" frobnicate
expect_fail "bad cluster spec" 1 "hgx:x" -- "$GS" simulate --no-progress --cluster hgx:x
expect_fail "unknown cluster kind" 1 "dgx" -- "$GS" simulate --no-progress --cluster dgx:4
expect_fail "missing trace" 1 "no-such-trace.csv" -- "$GS" simulate --no-progress --trace no-such-trace.csv
expect_fail "bad trace row" 1 "trace-bad.csv:4" -- "$GS" simulate --no-progress --trace tests/data/trace-bad.csv
expect_fail "missing nodes file" 1 "no-such-nodes.yaml" -- "$GS" simulate --no-progress --nodes no-such-nodes.yaml
printf 'apiVersion: v1\nkind: List\nitems:\n- metadata:\n    name: n1\n  status:\n    allocatable:\n      cpu: lots\n' >"$TMP/bad-nodes.yaml"
expect_fail "bad quantity in NodeList" 1 "lots" -- "$GS" simulate --no-progress --nodes "$TMP/bad-nodes.yaml"
expect_fail "unwritable events file" 1 "/nonexistent-dir/ev.jsonl" -- "$GS" simulate --no-progress --trace tests/data/trace-small.csv --events /nonexistent-dir/ev.jsonl
expect_fail "unwritable report" 1 "/nonexistent-dir/r.html" -- "$GS" simulate --no-progress --trace tests/data/trace-small.csv --report /nonexistent-dir/r.html
# flags (sched/cmd/flags.c): the flag and the value named, for every command
expect_fail "misspelt flag" 2 "unknown flag '--tolerat' (did you mean --tolerate?)" -- "$GS" simulate --tolerat x
expect_fail "flag given twice" 2 "flag --db given twice" -- "$GS" simulate --db a.db --db b.db
expect_fail "empty value" 2 "flag --trace needs a value (not an empty one)" -- "$GS" simulate --trace ''
expect_fail "number out of range" 2 "--high-priority '2': expected a number from 0 to 1" -- "$GS" simulate --high-priority 2
expect_fail "not a whole number" 2 "--seed 'x': expected a whole number" -- "$GS" simulate --seed x
expect_fail "bad duration" 2 "--failure-grace 'soon': expected a duration" -- "$GS" simulate --failure-grace soon
expect_fail "stray argument" 2 "unexpected argument 'extra'" -- "$GS" simulate extra
expect_fail "run: missing value" 2 "flag --config needs a value" -- "$GS" run --config
expect_fail "run: bad bool" 2 "--leader-elect 'yes': expected true or false" -- "$GS" run --leader-elect yes
expect_fail "run: bad level" 2 "--log-level 'loud': expected one of error, warn, info, debug" -- "$GS" run --log-level loud
expect_fail "run: cycle out of range" 2 "--cycle-ms '0': expected a duration from 1 to 1000000 ms" -- "$GS" run --cycle-ms 0
expect_fail "run: in-flight limit out of range" 2 "--kube-max-inflight '0': expected a whole number from 1 to 100000" -- "$GS" run --kube-max-inflight 0
expect_fail "run: required flags" 2 "--config and --db are required" -- "$GS" run --cycle-ms 50
expect_fail "serve: limit flag" 2 "--http-max-output '12x': expected a whole number from 1024 to 4294967295" -- "$GS" serve --db x.db --http-max-output 12x
expect_fail "serve: limit out of range" 2 "--http-max-conns '2000000': expected a whole number from 1 to 1000000" -- "$GS" serve --db x.db --http-max-conns 2000000
expect_fail "serve: stale out of range" 2 "--max-stale '2h': expected a duration from 0 to 3600000 ms" -- "$GS" serve --db x.db --max-stale 2h
expect_fail "serve: unknown flag" 2 "unknown flag '--lsten' (did you mean --listen?)" -- "$GS" serve --db x.db --lsten :0
expect_fail "serve: no --db" 2 "--db FILE is required" -- "$GS" serve --http-timeout 5s
expect_fail "config: flags anywhere, not both" 2 "give --nodes or --cluster, not both" -- "$GS" config --nodes a.yaml check x.yaml --cluster hgx:1
expect_fail "config: unknown flag" 2 "unknown flag '--node' (did you mean --nodes?)" -- "$GS" config check x.yaml --node a.yaml
"$GS" config --cluster hgx:4 check config/examples/full.yaml >/dev/null && ok "config: --cluster before check" || bad "config --cluster before check"
expect_fail "store: unknown flag" 2 "unknown flag '--fix'" -- "$GS" store check x.db --fix
# --help is made from the same table as the parser: every flag it lists is accepted
for c in simulate run serve config store; do
    for f in $("$GS" $c --help | grep -o -e '^  \(-[a-z], \)\?--[a-z-]*' | grep -o -e '--[a-z-]*'); do
        "$GS" $c "$f" 2>&1 | grep -q "unknown flag" && bad "$c --help lists $f, which the parser refuses"
    done
done
ok "every flag of simulate, run, serve, config and store --help is known to the parser"
# ... and every one is documented: simulate in simulator.md, run in daemon.md, serve in api.md
for c in simulate:docs/simulator.md run:docs/daemon.md serve:docs/api.md; do
    for f in $("$GS" ${c%%:*} --help | grep -o -e '^  \(-[a-z], \)\?--[a-z-]*' | grep -o -e '--[a-z-]*'); do
        [ "$f" = --help ] || grep -q -e "\`$f[ \`]" "${c#*:}" || bad "${c#*:} does not document ${c%%:*} $f"
    done
done
for f in $("$BIN/gangctl" --help | grep -o -e '^  \(-[a-zA-Z], \)\?--[a-z-]*' | grep -o -e '--[a-z-]*'); do
    grep -q -e "\`$f[ \`]" docs/cli.md || bad "docs/cli.md does not document gangctl $f"
done
ok "docs list the flags of simulate, run, serve and gangctl"
# a full standard output: exit 1 and the reason
if [ -w /dev/full ]; then
    expect_fail "--help to /dev/full" 1 "writing standard output: No space left on device" -- sh -c "\"$GS\" simulate --help >/dev/full"
    expect_fail "config check to /dev/full" 1 "writing standard output" -- sh -c "\"$GS\" config check config/examples/full.yaml >/dev/full"
    expect_fail "completion to /dev/full" 1 "writing standard output" -- sh -c "\"$GS\" completion bash >/dev/full"
    expect_fail "version to /dev/full" 1 "writing standard output" -- sh -c "\"$GS\" version >/dev/full"
else
    bad "/dev/full not writable here"
fi
finish
