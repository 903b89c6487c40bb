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
    python3 tests/bench/preempt_seeds.py --elastic 1 --update-docs   # what shrinking saves

With --elastic F the two runs per seed are gangsched as the traces are (every gang rigid) and
gangsched with `--elastic F` (that fraction of multi-pod jobs elastic, min_pods half their pods),
the figures going to the block between `preempt_seeds.py elastic begin` and `end`.

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
# the two runs compared per seed: (label, policy, extra arguments); --elastic replaces them
ARMS = [("gangsched", "gangsched", []), ("ckpt-blind", "ckpt-blind", [])]


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


def run(binary, seed, arm):
    _, policy, extra = arm
    cmd = [binary, "simulate", "--no-progress", "--json", "--cluster", "hgx:96",
           "--config", "config/examples/itp-tenants.yaml", "--high-priority", "0.33",
           "--seed", str(seed), "--policy", policy] + extra
    for t in TRACES:
        cmd += ["--trace", f"sched/sim/data/itp/cluster{t}.csv"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"preempt_seeds.py: seed {seed} {arm[0]}: {out.stderr.strip()}")
    p = json.loads(out.stdout)["policies"][0]
    hi = p["per_priority"].get("10", {})
    lo = p["per_priority"].get("0", {})
    return {"queue10": hi.get("mean_queue_s", 0.0), "wait10": hi.get("mean_wait_s", 0.0),
            "wait0": lo.get("mean_wait_s", 0.0), "lost": p["gpu_hours_lost_to_preemption"],
            "evictions": p["preemptions"], "members": p.get("member_preemptions", 0),
            "at_shrink": p.get("gpu_hours_lost_at_shrink", 0.0),
            "at_join": p.get("gpu_hours_lost_at_join", 0.0)}


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
    ap.add_argument("--elastic", type=float, metavar="F",
                    help="compare gangsched with --elastic F against gangsched rigid")
    ap.add_argument("--update-docs", action="store_true",
                    help=f"also write the figures into {DOC} (with the commit measured)")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"preempt_seeds.py: {args.bin}: not an executable (run make first)")
    arms = ARMS
    if args.elastic is not None:
        if not 0 < args.elastic <= 1:
            sys.exit("preempt_seeds.py: --elastic: a fraction above 0, at most 1")
        arms = [("elastic", "gangsched", ["--elastic", "%g" % args.elastic]),
                ("rigid", "gangsched", [])]
    (a, _, _), (b, _, _) = arms
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        futs = {(s, arm[0]): ex.submit(run, args.bin, s, arm) for s in seeds for arm in arms}
        res = {k: f.result() for k, f in futs.items()}
    print(f"seed  p10 queue {a} / {b}   p10 wait {a} / {b}   GPU-h lost {a} / {b}")
    for s in seeds:
        g, o = res[(s, a)], res[(s, b)]
        print(f"{s:4}  {g['queue10']:9.2f} / {o['queue10']:7.2f}   {g['wait10']:9.2f} / "
              f"{o['wait10']:7.2f}   {g['lost']:8.1f} / {o['lost']:7.1f} "
              f"({100 * g['lost'] / o['lost'] if o['lost'] else 0:.0f}%)")
    col = {k: ([res[(s, a)][k] for s in seeds], [res[(s, b)][k] for s in seeds])
           for k in ("queue10", "wait10", "wait0", "lost", "at_shrink", "at_join", "evictions",
                     "members")}
    print(f"\n{len(seeds)} seeds{'':<12} {a:>9} {b:>10} difference  s.e.   behind on")
    for label, key in ROWS:
        paired(label, *col[key])
    ratios = [g / o for g, o in zip(*col["lost"]) if o > 0]
    if ratios:
        print(f"GPU-hours lost, {a} / {b}: {100 * min(ratios):.0f}% to "
              f"{100 * max(ratios):.0f}% (mean {100 * statistics.mean(ratios):.0f}%)")
    if args.update_docs:
        marks = MARKS_ELASTIC if args.elastic is not None else MARKS
        update_docs(markdown(seeds, res, col, ratios, (a, b), args), marks)


DOC = "docs/preemption.md"
MARKS = ("<!-- preempt_seeds.py begin -->", "<!-- preempt_seeds.py end -->")
MARKS_ELASTIC = ("<!-- preempt_seeds.py elastic begin -->", "<!-- preempt_seeds.py elastic end -->")
# the paired rows: (label, key), in seconds but the last three
ROWS = [("mean queue, priority 10", "queue10"), ("mean wait, priority 10", "wait10"),
        ("mean wait, priority 0", "wait0"), ("GPU-hours lost", "lost"),
        ("of which as members left", "at_shrink"), ("of which as members joined", "at_join"),
        ("evictions (whole gangs)", "evictions"), ("member preemptions", "members")]


def markdown(seeds, res, col, ratios, names, args):
    """The docs block: the first 8 seeds one by one, then the paired summary."""
    a, b = names
    head = seeds[:8]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                      capture_output=True, text=True).stdout.strip():
        commit += "` with local changes `"
    ranged = seeds == list(range(seeds[0], seeds[-1] + 1))
    which = (f"seeds {seeds[0]} to {seeds[-1]}" if ranged
             else "seeds " + ", ".join(str(s) for s in seeds))
    how = "--update-docs" if args.elastic is None else f"--elastic {args.elastic:g} --update-docs"
    rows = [f"Measured by `tests/bench/preempt_seeds.py {how}` at commit `{commit}`, "
            f"{which}.".replace(" ``", ""), "",
            "| seed | " + " | ".join(str(s) for s in head) + " |",
            "|---|" + "---|" * len(head)]
    for key in (a, b):
        rows.append(f"| mean queue priority 10, {key} | "
                    + " | ".join(f"{res[(s, key)]['queue10']:.2f}" for s in head) + " |")
    rows.append(f"| GPU-hours lost, {a} / {b} | " + " | ".join(
        f"{100 * res[(s, a)]['lost'] / res[(s, b)]['lost']:.0f}%"
        if res[(s, b)]["lost"] else "-" for s in head) + " |")
    rows += ["", f"| {len(seeds)} seeds | {a} | {b} | difference | s.e. | {a} behind on |",
             "|---|---|---|---|---|---|"]
    for label, key in ROWS[:3] if args.elastic is None else ROWS:
        x, y = col[key]
        unit = " s" if key in ("queue10", "wait10", "wait0") else ""
        d = [p - q for p, q in zip(x, y)]
        se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else float("nan")
        rows.append(f"| {label} | {statistics.mean(x):.2f}{unit} | {statistics.mean(y):.2f}{unit} "
                    f"| {statistics.mean(d):+.2f}{unit} | {se:.2f}{unit} | "
                    f"{sum(1 for v in d if v > 0)} of {len(d)} seeds |")
    if ratios and args.elastic is None:
        rows.append(f"| GPU-hours lost to preemption | {100 * min(ratios):.0f}% to "
                    f"{100 * max(ratios):.0f}% of {b}'s (mean "
                    f"{100 * statistics.mean(ratios):.0f}%) | | | | |")
    return "\n".join(rows) + "\n"


def update_docs(block, marks):
    begin, end = marks
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    if doc.count(begin) != 1 or doc.count(end) != 1:
        sys.exit(f"preempt_seeds.py: {DOC}: expected one {begin} and one {end}")
    doc = re.sub(re.escape(begin) + ".*?" + re.escape(end),
                 lambda _: f"{begin}\n{block}{end}", doc, flags=re.S)
    with open(DOC + ".tmp", "w", encoding="utf-8") as f:
        f.write(doc)
    os.replace(DOC + ".tmp", DOC)  # whole or not at all
    print(f"preempt_seeds.py: rewrote {DOC}")


if __name__ == "__main__":
    main()
