#!/usr/bin/env python3
"""tests/bench/scale_doc.py: the scaling curve of `bench_scale` into the docs.

Runs BUILD/tests/bench_scale --markdown (cluster07 replayed on hgx:1,000 ... hgx:100,000), puts
the table into docs/simulator.md between the scale-table markers and draws docs/scale.svg (replay
CPU time and peak RSS against the number of nodes, logarithmic node axis). Run from the
repository root (`make scale-doc`).
"""
import math
import os
import re
import subprocess
import sys

DOC = "docs/simulator.md"
SVG = "docs/scale.svg"
BEGIN = "<!-- scale-table:begin (written by tests/bench/scale_doc.py: make scale-doc) -->"
END = "<!-- scale-table:end -->"


def measure(build):
    out = subprocess.run([os.path.join(build, "tests", "bench_scale"), "--markdown"],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\| hgx:(\d+) \| \d+ \| \d+ \| ([\d.]+) s \| [\d.]+x \| ([\d.]+) s \| (\d+) MB \|",
                     line)
        if m:
            rows.append((int(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))))
    if len(rows) < 2:
        sys.exit("scale_doc: no table from bench_scale:\n" + out)
    return out.strip(), rows


def put_table(table):
    text = open(DOC, encoding="utf-8").read()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        sys.exit("scale_doc: %s has no scale-table markers" % DOC)
    cpus = os.cpu_count() or 1
    body = "%s\n%s\n\nMeasured on %d CPU(s); `make scale-doc` measures again.\n" % (BEGIN, table, cpus)
    tmp = DOC + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text[:a] + body + text[b:])
    os.replace(tmp, DOC)


def svg(rows):
    w, h, l, r, t, b = 640, 320, 60, 60, 30, 50
    xs = [math.log10(n) for n, _, _, _ in rows]
    x0, x1 = min(xs), max(xs)
    cpu_max = max(c for _, c, _, _ in rows) * 1.2 or 1
    rss_max = max(m for _, _, _, m in rows) * 1.2 or 1

    def px(x):
        return l + (x - x0) / (x1 - x0) * (w - l - r)

    def py(v, vmax):
        return h - b - v / vmax * (h - t - b)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18">cluster07 replayed on hgx:N (gangsched): replay CPU time (blue, left) '
           'and peak RSS (orange, right)</text>' % l,
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (l, h - b, w - r, h - b),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (l, t, l, h - b),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (w - r, t, w - r, h - b)]
    for n, _, _, _ in rows:
        x = px(math.log10(n))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, h - b + 16, f"{n:,}"))
    out.append('<text x="%d" y="%d" text-anchor="middle">nodes (log scale)</text>' % ((l + w - r) // 2,
                                                                                  h - 12))
    for k in range(5):
        v = cpu_max * k / 4
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f s</text>' % (l - 4, py(v, cpu_max) + 4, v))
        m = rss_max * k / 4
        out.append('<text x="%d" y="%.1f">%.0f MB</text>' % (w - r + 4, py(m, rss_max) + 4, m))
    for idx, vmax, color in ((1, cpu_max, "#1f77b4"), (3, rss_max, "#ff7f0e")):
        pts = " ".join("%.1f,%.1f" % (px(math.log10(row[0])), py(row[idx], vmax)) for row in rows)
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>' % (pts, color))
        for row in rows:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (
                px(math.log10(row[0])), py(row[idx], vmax), color))
    out.append("</svg>")
    with open(SVG + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    os.replace(SVG + ".tmp", SVG)


def main():
    table, rows = measure(os.environ.get("BUILD", "build"))
    put_table(table)
    svg(rows)
    print("scale_doc: wrote the table into %s and %s" % (DOC, SVG))


if __name__ == "__main__":
    main()
