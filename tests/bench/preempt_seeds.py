#!/usr/bin/env python3
"""tests/bench/preempt_seeds.py: the preemption figures of docs/preemption.md, over many seeds.

Runs `gangsched simulate` on the seven ITP tenants (config/examples/itp-tenants.yaml, hgx:96, one
third of the jobs at priority 10) once per seed and policy, gangsched and ckpt-blind, and prints
one line per seed and a summary: means, the paired difference with its standard error, and on
how many seeds gangsched is behind. A single seed is decided by a few bursts of high-priority
jobs, so only the mean over many seeds says which policy is ahead.

    make preempt-figures                      # seeds 1..64, every core
    python3 tests/bench/preempt_seeds.py --seeds 1-8 --jobs 2
    python3 tests/bench/preempt_seeds.py --update-docs   # also rewrites docs/preemption.md's block

Not part of `make test` (64 seeds x 2 policies take about 8 minutes on 2 cores). --update-docs
writes the per-seed table of the first 8 seeds and the summary, with the commit measured, between
docs/preemption.md's `preempt_seeds.py begin` and `end` markers (the whole file at once).
"""
import argparse
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys

TRACES = ["01", "02", "05", "07", "08", "09", "10"]
POLICIES = ["gangsched", "ckpt-blind"]


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            sys.exit(f"preempt_seeds.py: --seeds: '{part}' is not N or N-M")
        if a < 0 or b < a:
            sys.exit(f"preempt_seeds.py: --seeds: '{part}' is an empty range")
        seeds.extend(range(a, b + 1))
    return seeds


def run(binary, seed, policy):
    cmd = [binary, "simulate", "--no-progress", "--json", "--cluster", "hgx:96",
           "--config", "config/examples/itp-tenants.yaml", "--high-priority", "0.33",
           "--seed", str(seed), "--policy", policy]
    for t in TRACES:
        cmd += ["--trace", f"sched/sim/data/itp/cluster{t}.csv"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"preempt_seeds.py: seed {seed} {policy}: {out.stderr.strip()}")
    p = json.loads(out.stdout)["policies"][0]
    hi = p["per_priority"].get("10", {})
    lo = p["per_priority"].get("0", {})
    return {"queue10": hi.get("mean_queue_s", 0.0), "wait10": hi.get("mean_wait_s", 0.0),
            "wait0": lo.get("mean_wait_s", 0.0), "lost": p["gpu_hours_lost_to_preemption"]}


def paired(name, a, b):
    d = [x - y for x, y in zip(a, b)]
    se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
    behind = sum(1 for x in d if x > 0)
    print(f"{name:<26} {statistics.mean(a):9.2f} {statistics.mean(b):10.2f} "
          f"{statistics.mean(d):+9.2f} {se:7.2f}   {behind}/{len(d)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-64", help="seeds: N, N-M, comma-separated")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at a time")
    ap.add_argument("--bin", default=os.environ.get("BIN", "bin") + "/gangsched")
    ap.add_argument("--update-docs", action="store_true",
                    help=f"also write the figures into {DOC} (with the commit measured)")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"preempt_seeds.py: {args.bin}: not an executable (run make first)")
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        futs = {(s, p): ex.submit(run, args.bin, s, p) for s in seeds for p in POLICIES}
        res = {k: f.result() for k, f in futs.items()}
    print("seed  p10 queue gangsched / blind   p10 wait gangsched / blind   "
          "GPU-h lost gangsched / blind")
    for s in seeds:
        g, b = res[(s, "gangsched")], res[(s, "ckpt-blind")]
        print(f"{s:4}  {g['queue10']:9.2f} / {b['queue10']:7.2f}   {g['wait10']:9.2f} / "
              f"{b['wait10']:7.2f}   {g['lost']:8.1f} / {b['lost']:7.1f} "
              f"({100 * g['lost'] / b['lost'] if b['lost'] else 0:.0f}%)")
    col = {k: ([res[(s, "gangsched")][k] for s in seeds], [res[(s, "ckpt-blind")][k] for s in seeds])
           for k in ("queue10", "wait10", "wait0", "lost")}
    print(f"\n{len(seeds)} seeds{'':<12} gangsched ckpt-blind difference  s.e.   behind on")
    paired("mean queue, priority 10", *col["queue10"])
    paired("mean wait, priority 10", *col["wait10"])
    paired("mean wait, priority 0", *col["wait0"])
    ratios = [g / b for g, b in zip(*col["lost"]) if b > 0]
    if ratios:
        print(f"GPU-hours lost, gangsched / ckpt-blind: {100 * min(ratios):.0f}% to "
              f"{100 * max(ratios):.0f}% (mean {100 * statistics.mean(ratios):.0f}%)")
    if args.update_docs:
        update_docs(markdown(seeds, res, col, ratios))


DOC = "docs/preemption.md"
BEGIN, END = "<!-- preempt_seeds.py begin -->", "<!-- preempt_seeds.py end -->"


def markdown(seeds, res, col, ratios):
    """The docs block: the first 8 seeds one by one, then the paired summary."""
    head = seeds[:8]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                      capture_output=True, text=True).stdout.strip():
        commit += "` with local changes `"
    ranged = seeds == list(range(seeds[0], seeds[-1] + 1))
    which = (f"seeds {seeds[0]} to {seeds[-1]}" if ranged
             else "seeds " + ", ".join(str(s) for s in seeds))
    rows = [f"Measured by `tests/bench/preempt_seeds.py --update-docs` at commit `{commit}`, "
            f"{which}.".replace(" ``", ""), "",
            "| seed | " + " | ".join(str(s) for s in head) + " |",
            "|---|" + "---|" * len(head)]
    for label, key in (("mean queue priority 10, gangsched", "gangsched"),
                       ("mean queue priority 10, ckpt-blind", "ckpt-blind")):
        rows.append(f"| {label} | " + " | ".join(f"{res[(s, key)]['queue10']:.2f}" for s in head)
                    + " |")
    rows.append("| GPU-hours lost, gangsched / ckpt-blind | " + " | ".join(
        f"{100 * res[(s, 'gangsched')]['lost'] / res[(s, 'ckpt-blind')]['lost']:.0f}%"
        if res[(s, "ckpt-blind")]["lost"] else "-" for s in head) + " |")
    rows += ["", f"| {len(seeds)} seeds | gangsched | ckpt-blind | difference | s.e. | "
             "gangsched behind on |", "|---|---|---|---|---|---|"]
    for label, key, unit in (("mean queue, priority 10", "queue10", " s"),
                             ("mean wait, priority 10", "wait10", " s"),
                             ("mean wait, priority 0", "wait0", " s")):
        a, b = col[key]
        d = [x - y for x, y in zip(a, b)]
        se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
        rows.append(f"| {label} | {statistics.mean(a):.2f}{unit} | {statistics.mean(b):.2f}{unit} "
                    f"| {statistics.mean(d):+.2f}{unit} | {se:.2f}{unit} | "
                    f"{sum(1 for x in d if x > 0)} of {len(d)} seeds |")
    if ratios:
        rows.append(f"| GPU-hours lost to preemption | {100 * min(ratios):.0f}% to "
                    f"{100 * max(ratios):.0f}% of ckpt-blind's (mean "
                    f"{100 * statistics.mean(ratios):.0f}%) | | | | |")
    return "\n".join(rows) + "\n"


def update_docs(block):
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    if doc.count(BEGIN) != 1 or doc.count(END) != 1:
        sys.exit(f"preempt_seeds.py: {DOC}: expected one {BEGIN} and one {END}")
    doc = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END),
                 lambda _: f"{BEGIN}\n{block}{END}", doc, flags=re.S)
    with open(DOC + ".tmp", "w", encoding="utf-8") as f:
        f.write(doc)
    os.replace(DOC + ".tmp", DOC)  # whole or not at all
    print(f"preempt_seeds.py: rewrote {DOC}")


if __name__ == "__main__":
    main()
