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
import os
import subprocess
import sys
import tempfile

BIN = os.environ.get("BIN", "bin")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ["README.md", "docs/cli.md"]

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


BLOCKS = {"demo-table": demo_table, "gangctl-examples": gangctl_examples}


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
