#!/usr/bin/env python3
"""The sharing-incentive figures of docs/simulator.md (issue 19): every scenario run once with
the policies gangsched, fifo and private; prints the overall table, a per-tenant table for each
multi-tenant scenario and which targets hold.
Usage: BIN=bin python3 tests/bench/fairness.py [--markdown | --update-docs | --check]
--update-docs also writes the (plain) output into docs/simulator.md between its fairness.py
markers, the whole file at once; --check prints nothing but a diff and exits 1 when that block is
out of date (tests/sim/figures.sh runs it on every make test)."""
import difflib
import io
import json
import os
import re
import subprocess
import sys

BIN = os.environ.get("BIN", "bin")
D = "sched/sim/data/itp"
TENANTS = ["01", "02", "05", "07", "08", "09", "10"]
# each dev trace alone on a cluster where fifo's mean queue is between 10 minutes and hours
TENANTS_YAML = "config/examples/itp-tenants.yaml"
# (name, cluster, config, traces, extra flags); the last is same_decisions.sh's `tenants` case
SCENARIOS = [("cluster01 alone", "hgx:16", None, ["01"], []),
             ("cluster02 alone", "hgx:24", None, ["02"], []),
             ("cluster05 alone", "hgx:8", None, ["05"], []),
             ("cluster07 alone", "hgx:64", None, ["07"], []),
             ("cluster08 alone", "hgx:16", None, ["08"], []),
             ("cluster09 alone", "hgx:8", None, ["09"], []),
             ("cluster10 alone", "hgx:4", None, ["10"], []),
             ("seven tenants", "hgx:96", TENANTS_YAML, TENANTS, []),
             ("seven tenants, a third at priority 10", "hgx:96", TENANTS_YAML, TENANTS,
              ["--high-priority", "0.33"])]
DOC = "docs/simulator.md"
BEGIN, END = "<!-- fairness.py begin -->", "<!-- fairness.py end -->"
POLICIES = ["gangsched", "fifo", "private"]


def run(cluster, config, traces, extra):
    cmd = [f"{BIN}/gangsched", "simulate", "--cluster", cluster, "--json", "--no-progress"] + extra
    if config:
        cmd += ["--config", config]
    for t in traces:
        cmd += ["--trace", f"{D}/cluster{t}.csv"]
    for p in POLICIES:
        cmd += ["--policy", p]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {p["name"]: p for p in json.loads(out)["policies"]}


def h(s):
    return f"{s / 3600:.2f}h" if s >= 3600 else f"{s / 60:.1f}m"


def main():
    if "--markdown" in sys.argv and "--update-docs" in sys.argv:
        sys.exit("fairness.py: --update-docs writes the plain tables; drop --markdown")
    check = "--check" in sys.argv
    text = io.StringIO()
    report(text, "--markdown" in sys.argv)
    if not check:
        sys.stdout.write(text.getvalue())
    if "--update-docs" in sys.argv or check:
        with open(DOC, encoding="utf-8") as f:
            old = f.read()
        if old.count(BEGIN) != 1 or old.count(END) != 1:
            sys.exit(f"{DOC}: expected one {BEGIN} and one {END}")
        block = f"{BEGIN}\n```\n{text.getvalue()}```\n{END}"
        doc = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, old, flags=re.S)
        if check:
            if doc == old:
                return 0
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), doc.splitlines(True), DOC, DOC + " (generated)"))
            print("fairness.py: out of date; run 'python3 tests/bench/fairness.py --update-docs'")
            return 1
        tmp = DOC + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(doc)
        os.replace(tmp, DOC)  # whole or not at all


def report(out, md):
    def say(x=""):
        print(x, file=out)

    failures = []
    overall = ["scenario", "cluster", "mean g/f/p", "p95 g/f/p", "multi-node mean g/f",
               "util g/f", "quota viol.", "ETA err med/p90 (covered)"]
    rows, qtables = [], []
    for name, cluster, config, traces, extra in SCENARIOS:
        r = run(cluster, config, traces, extra)
        g, f, p = r["gangsched"], r["fifo"], r["private"]
        rows.append([name, cluster,
                     f"{h(g['mean_queue_s'])} / {h(f['mean_queue_s'])} / {h(p['mean_queue_s'])}",
                     f"{h(g['p95_queue_s'])} / {h(f['p95_queue_s'])} / {h(p['p95_queue_s'])}",
                     f"{h(g['multinode_mean_queue_s'])} / {h(f['multinode_mean_queue_s'])}",
                     f"{100 * g['gpu_utilization']:.1f}% / {100 * f['gpu_utilization']:.1f}%",
                     str(g["quota_violations"]),
                     f"{100 * g['eta_median_rel_error']:.0f}% / {100 * g['eta_p90_rel_error']:.0f}%"
                     f" ({g['eta_covered']}/{g['eta_waited']})"])
        if g["multinode_mean_queue_s"] > f["multinode_mean_queue_s"]:
            failures.append(f"{name}: multi-node mean {h(g['multinode_mean_queue_s'])} > fifo "
                            f"{h(f['multinode_mean_queue_s'])}")
        if g["gpu_utilization"] < f["gpu_utilization"] - 0.001:
            failures.append(f"{name}: utilisation below fifo")
        if g["quota_violations"]:
            failures.append(f"{name}: quota violations")
        if g["eta_median_rel_error"] >= 0.30:
            failures.append(f"{name}: ETA median error {100 * g['eta_median_rel_error']:.0f}%")
        if len(traces) > 1:
            qrows = []
            qtables.append((f"{name} on {cluster}", qrows))
            if g["mean_queue_s"] > 0.45 * f["mean_queue_s"]:
                failures.append(f"{name}: mean {h(g['mean_queue_s'])} > 0.45x fifo")
            if g["p95_queue_s"] > 0.5 * f["p95_queue_s"]:
                failures.append(f"{name}: p95 {h(g['p95_queue_s'])} > 0.5x fifo")
            for q, gq in g["per_queue"].items():
                fq, pq = f["per_queue"][q], p["per_queue"][q]
                qrows.append([q, str(gq["jobs"]), str(int(gq["nominal_gpus"])),
                              f"{h(gq['mean_queue_s'])} / {h(pq['mean_queue_s'])} / "
                              f"{h(fq['mean_queue_s'])}",
                              f"{h(gq['p95_queue_s'])} / {h(pq['p95_queue_s'])} / "
                              f"{h(fq['p95_queue_s'])}",
                              f"{h(gq['multinode_mean_queue_s'])} / "
                              f"{h(pq['multinode_mean_queue_s'])} / "
                              f"{h(fq['multinode_mean_queue_s'])}"])
                for k in ("mean_queue_s", "p95_queue_s"):
                    for other, o in (("private", pq), ("fifo", fq)):
                        if gq[k] > o[k]:
                            failures.append(f"{name}: {q} {k} {h(gq[k])} > {other} {h(o[k])}")

    def table(head, body):
        if md:
            say("| " + " | ".join(head) + " |")
            say("|" + "---|" * len(head))
            for b in body:
                say("| " + " | ".join(b) + " |")
        else:
            w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
            for b in [head] + body:
                say("  ".join(x.ljust(w[i]) for i, x in enumerate(b)).rstrip())
        say()

    say("Overall (g = gangsched, f = fifo, p = private)\n")
    table(overall, rows)
    qhead = ["queue", "jobs", "nominal GPUs", "mean queue", "p95 queue", "multi-node mean"]
    for title, qrows in qtables:
        say(f"Per tenant, {title} (shared / private / fifo)\n")
        table(qhead, qrows)
    say("Targets not met:" if failures else "All targets met.")
    for x in failures:
        say(f"- {x}")


if __name__ == "__main__":
    sys.exit(main())
