#!/usr/bin/env python3
"""docs/figures.py: the figures that README.md and docs/*.md show, generated from bin/ so they
cannot drift from what the programs print.

    python3 docs/figures.py          rewrite every block in place
    python3 docs/figures.py --check  exit 1 (and show a diff) when a block is out of date

A block is the text between a line `<!-- figures: NAME -->` and the next `<!-- /figures -->`;
NAME is one of BLOCKS below. Environment: BIN (default bin). tests/sim/figures.sh runs --check
on every `make test`.
"""
import difflib
import json
import os
import subprocess
import sys
import tempfile

BIN = os.environ.get("BIN", "bin")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ["README.md", "docs/cli.md", "docs/simulator.md", "docs/preemption.md"]

# The stopped simulation the gangctl examples read (jobs still pending and running).
STOPPED = ["--no-progress", "--policy", "gangsched", "--cluster", "hgx:4,pcie:2", "--trace",
           "tests/data/trace-crash.csv", "--high-priority", "0.33", "--stop-after-events", "1500",
           "--db-batch", "16"]


def run(args, ok=(0,)):
    p = subprocess.run(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode not in ok:
        sys.exit("figures: %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def demo_table(_):
    """README: the default simulation, the rows the README talks about."""
    out = run([BIN + "/gangsched", "simulate", "--no-progress"]).splitlines()
    keep = ("metric", "mean queue time", "p95 queue time", "tensor-parallel splits",
            "racks per multi-node gang", "preemptions (evictions)", "quota violations",
            "waited within nominal quota")
    rows = [l for l in out if l[:32].strip() in keep]
    return "```\n" + "\n".join(rows) + "\n...\n```\n"


def gangctl_examples(db):
    """docs/cli.md: gangctl on the stopped simulation."""
    ctl = BIN + "/gangctl"
    parts = ["```",
             "$ gangsched simulate --no-progress --policy gangsched --cluster hgx:4,pcie:2 \\",
             "    --trace tests/data/trace-crash.csv --high-priority 0.33 --db run.db \\",
             "    --stop-after-events 1500 --db-batch 16"]
    first = run([ctl, "--db", db, "jobs", "-q", "prod", "-o", "json"])
    job = first.split('"job":')[1].split('"')[1]
    shown = [
        (["quota"], None),
        (["queues"], None),
        (["jobs", "-q", "prod"], 3),
        (["explain", job], 18),
        (["top"], 10),
        (["quota", "research", "-o", "yaml"], None),
    ]
    for args, head in shown:
        text = run([ctl, "--db", db] + args).rstrip("\n").splitlines()
        cmd = "$ gangctl --db run.db " + " ".join(args)
        if head:
            cmd += " | head -%d" % head
            text = text[:head]
        parts.append(cmd)
        parts.extend(l.rstrip() for l in text)
    return "\n".join(parts) + "\n```\n"


ITP = "sched/sim/data/itp/"
SEVEN = ["cluster01", "cluster02", "cluster05", "cluster07", "cluster08", "cluster09", "cluster10"]


_RUNS = {}


def sim_json(args):
    """A simulate run's --json, each distinct run once (several blocks show the same run)."""
    key = tuple(args)
    if key not in _RUNS:
        _RUNS[key] = json.loads(run([BIN + "/gangsched", "simulate", "--no-progress", "--json"]
                                    + args))
    return _RUNS[key]


def dur(v):
    """Seconds, with hours or days beside when long."""
    v = float(v)
    if v >= 86400 * 2:
        return "%.0f (%.1f d)" % (v, v / 86400)
    if v >= 3600:
        return "%.0f (%.2f h)" % (v, v / 3600)
    return "%.0f" % v if v == int(v) or v >= 100 else "%.1f" % v


def num(v, fmt="%d"):
    return fmt % v


# (label, how one policy's cell is made)
KPI_ROWS = [
    ("`completed` / `rejected`", lambda p: "%d / %d" % (p["completed"], p["rejected"])),
    ("`mean_queue_s`", lambda p: dur(p["mean_queue_s"])),
    ("`p50_queue_s` / `p95_queue_s` / `p99_queue_s`",
     lambda p: "%.0f / %.0f / %.0f" % (p["p50_queue_s"], p["p95_queue_s"], p["p99_queue_s"])),
    ("`multinode_mean_queue_s` (`multinode_jobs`)",
     lambda p: "%s (%d)" % (dur(p["multinode_mean_queue_s"]), p["multinode_jobs"])),
    ("`mean_jct_s` / `p95_jct_s`", lambda p: "%.0f / %.0f" % (p["mean_jct_s"], p["p95_jct_s"])),
    ("`gpu_utilization`", lambda p: "%.4f" % p["gpu_utilization"]),
    ("`makespan_s`", lambda p: dur(p["makespan_s"])),
    ("`tp_splits`", lambda p: "%d" % p["tp_splits"]),
    ("`mean_racks_per_multinode_gang` (`multinode_gangs`)",
     lambda p: "%.2f (%d)" % (p["mean_racks_per_multinode_gang"], p["multinode_gangs"])),
    ("`fragmentation` / `whole_node_wait_share`",
     lambda p: "%.4f / %.4f" % (p["fragmentation"], p["whole_node_wait_share"])),
    ("`backfilled` / `reservations` / `preemptions`",
     lambda p: "%d / %d / %d" % (p["backfilled"], p["reservations"], p["preemptions"])),
    ("`quota_violations` / `reclaim_wait_s`",
     lambda p: "%d / %s" % (p["quota_violations"], dur(p["reclaim_wait_s"]))),
    ("`eta_median_rel_error` / `eta_p90_rel_error`",
     lambda p: "%.2f / %.2f" % (p["eta_median_rel_error"], p["eta_p90_rel_error"])),
]
QUEUE_ROWS = [
    ("`nominal_gpus`", lambda q: "%.0f" % q["nominal_gpus"]),
    ("`mean_queue_s`", lambda q: "%.0f" % q["mean_queue_s"]),
    ("`p95_queue_s`", lambda q: "%.0f" % q["p95_queue_s"]),
    ("`multinode_mean_queue_s`", lambda q: "%.0f" % q["multinode_mean_queue_s"]),
    ("`max_usage_gpus`", lambda q: "%.0f" % q["max_usage_gpus"]),
    ("`borrowed_gpu_hours`", lambda q: "%.0f" % q["borrowed_gpu_hours"]),
    ("`reclaim_wait_s`", lambda q: "%.0f" % q["reclaim_wait_s"]),
]


def kpi_block(cmd, args, policies, per_queue=False):
    """A simulate run: its command, one column per policy, and per queue when asked."""
    pols = sim_json(args + sum((["--policy", x] for x in policies), []))["policies"]
    out = ["```sh", cmd, "```", "",
           "| Key | " + " | ".join(p["name"] for p in pols) + " |",
           "|---|" + "---:|" * len(pols)]
    for label, cell in KPI_ROWS:
        out.append("| %s | %s |" % (label, " | ".join(cell(p) for p in pols)))
    if per_queue:
        names = list(pols[0]["per_queue"])
        out += ["", "Per queue, " + " / ".join(p["name"] for p in pols) + ":", "",
                "| Queue (jobs) | " + " | ".join(l for l, _ in QUEUE_ROWS) + " |",
                "|---|" + "---:|" * len(QUEUE_ROWS)]
        for n in names:
            cells = [" / ".join(cell(p["per_queue"][n]) for p in pols) for _, cell in QUEUE_ROWS]
            out.append("| `%s` (%d) | %s |" % (n, pols[0]["per_queue"][n]["jobs"], " | ".join(cells)))
    return "\n".join(out) + "\n"


def traces(names):
    return sum((["--trace", ITP + n + ".csv"] for n in names), [])


def cmd_line(args):
    parts, line, lines = ["./bin/gangsched simulate --no-progress"] + [
        a + " " + b for a, b in zip(args[::2], args[1::2])], "", []
    for part in parts:
        if line and len(line) + len(part) > 92:
            lines.append(line + " \\")
            line = "  "
        line += ("" if line.strip() == "" else " ") + part if line.strip() else line + part
    return "\n".join(lines + [line])


def sim_default(_):
    """docs/simulator.md: the default run, with the private baseline."""
    return kpi_block("./bin/gangsched simulate --no-progress --policy gangsched --policy fifo "
                     "--policy private", [], ["gangsched", "fifo", "private"], per_queue=True)


def sim_cluster07(_):
    """docs/simulator.md: cluster07 alone on hgx:64."""
    args = ["--cluster", "hgx:64"] + traces(["cluster07"])
    return kpi_block(cmd_line(args), args, ["gangsched", "fifo"])


def sim_hgx128(_):
    """docs/simulator.md: the seven ITP files as seven queues, generated quotas."""
    args = ["--cluster", "hgx:128"] + traces(SEVEN)
    return kpi_block(cmd_line(args), args, ["gangsched", "fifo"], per_queue=True)


def sim_tenants(_):
    """docs/simulator.md: the seven tenants with config/examples/itp-tenants.yaml."""
    args = ["--cluster", "hgx:96", "--config", "config/examples/itp-tenants.yaml"] + traces(SEVEN)
    return kpi_block(cmd_line(args), args, ["gangsched", "fifo", "private"], per_queue=True)


PLACEMENT_RUNS = [("cluster01", "hgx:16"), ("cluster02", "hgx:24"), ("cluster05", "hgx:4"),
                  ("cluster07", "hgx:64"), ("cluster08", "hgx:16"), ("cluster09", "hgx:8"),
                  ("cluster10", "hgx:2")]


def sim_placement(_):
    """docs/simulator.md: placement figures of each ITP file alone, then all seven."""
    out = ["| Trace | Cluster | `fragmentation` | `whole_node_wait_share` | `tp_splits` | "
           "`mean_racks_per_multinode_gang` (`multinode_gangs`) | `mean_queue_s` |",
           "|---|---|---:|---:|---:|---:|---:|"]
    runs = [(n, c, traces([n])) for n, c in PLACEMENT_RUNS] + [("all-seven", "hgx:128", traces(SEVEN))]
    for name, cluster, tr in runs:
        g, f = sim_json(["--cluster", cluster] + tr + ["--policy", "gangsched", "--policy", "fifo"])[
            "policies"]
        out.append("| %s | %s | %.4f / %.4f | %.4f / %.4f | %d / %d | %.2f / %.2f (%d) | %.0f / %.0f |" % (
            name, cluster, g["fragmentation"], f["fragmentation"], g["whole_node_wait_share"],
            f["whole_node_wait_share"], g["tp_splits"], f["tp_splits"],
            g["mean_racks_per_multinode_gang"], f["mean_racks_per_multinode_gang"],
            g["multinode_gangs"], g["mean_queue_s"], f["mean_queue_s"]))
    return "\n".join(out) + "\n"


def preempt_seed1(_):
    """docs/preemption.md: the three policies on the seven tenants, a third at priority 10."""
    args = (["--cluster", "hgx:96", "--config", "config/examples/itp-tenants.yaml",
             "--high-priority", "0.33"] + traces(SEVEN))
    pols = sim_json(args + ["--policy", "gangsched", "--policy", "ckpt-blind", "--policy", "fifo"])
    out = ["```sh", cmd_line(args + ["--policy", "gangsched", "--policy", "ckpt-blind",
                                     "--policy", "fifo"]), "```", "",
           "| policy | evictions | GPU-hours lost to preemption | mean queue, priority 10 | "
           "mean wait, priority 10 | mean wait, priority 0 | mean wait, all | quota violations |",
           "|---|---|---|---|---|---|---|---|"]
    for p in pols["policies"]:
        hi, lo = p["per_priority"].get("10", {}), p["per_priority"].get("0", {})
        out.append("| %s | {:,} | %.1f | %.1f s | %.1f s | %.1f s | %.1f s | %d |".format(
            p["preemptions"]) % (p["name"], p["gpu_hours_lost_to_preemption"],
                                 hi.get("mean_queue_s", 0), hi.get("mean_wait_s", 0),
                                 lo.get("mean_wait_s", 0), p["mean_wait_s"], p["quota_violations"]))
    return "\n".join(out) + "\n"


BLOCKS = {"demo-table": demo_table, "preempt-seed1": preempt_seed1, "gangctl-examples": gangctl_examples,
          "sim-default": sim_default, "sim-cluster07": sim_cluster07, "sim-hgx128": sim_hgx128,
          "sim-tenants": sim_tenants, "sim-placement": sim_placement}


def render(text, ctx):
    out, i, lines = [], 0, text.splitlines(keepends=True)
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not line.startswith("<!-- figures: "):
            continue
        name = line[len("<!-- figures: "):].split()[0]
        if name not in BLOCKS:
            sys.exit("figures: unknown block %r" % name)
        while i < len(lines) and not lines[i].startswith("<!-- /figures -->"):
            i += 1
        if i == len(lines):
            sys.exit("figures: block %r has no end marker" % name)
        out.append(BLOCKS[name](ctx))
    return "".join(out)


def main():
    check = "--check" in sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "run.db")
        run([BIN + "/gangsched", "simulate"] + STOPPED + ["--db", db], ok=(75,))
        stale = False
        for rel in FILES:
            path = os.path.join(ROOT, rel)
            old = open(path).read()
            new = render(old, db)
            if new == old:
                continue
            if check:
                stale = True
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True), rel, rel + " (generated)"))
            else:
                open(path, "w").write(new)
                print("figures: rewrote " + rel)
    if stale:
        print("figures: out of date; run 'python3 docs/figures.py'")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
