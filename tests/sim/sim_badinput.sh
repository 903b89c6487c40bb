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
finish
