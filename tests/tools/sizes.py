#!/usr/bin/env python3
"""tests/tools/sizes.py: the size rules of the style guide, checked.

    python3 tests/tools/sizes.py [--all] [DIR...]

Lists every C source file over 1,200 lines and every function over 120 lines (from the line of
its name to its closing brace) under the module directories (default: sched queue plugins config
store; tests and generated data aside). Exits 1 when something is over, 0 otherwise. A function
is a definition that starts in column 0 and ends at the next '}' in column 0 (clang-format keeps
our code in that shape). --all prints every function's length, longest first.
"""
import os
import re
import sys

MAX_FILE = 1200
MAX_FUNC = 120
DIRS = ["sched", "queue", "plugins", "config", "store"]
NAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    """(length, name, first line) per function: a '{' in column 0 opens a body (clang-format's
    Linux brace style), its name is on the last column-0 line with '(' before it, and the body
    ends at the next '}' in column 0. Length counts from the name's line to the closing brace."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    out = []
    head = None  # (line index, name) of the last column-0 line that could name a function
    open_at = None
    for i, line in enumerate(lines):
        if open_at is None:
            if line[:1].isalpha() or line[:1] == "_":
                m = NAME.search(line)
                head = (i, m.group(1)) if m else head
            elif line.startswith("{") and head is not None:
                open_at = head
        elif line.startswith("}"):
            out.append((i - open_at[0] + 1, open_at[1], open_at[0] + 1))
            open_at, head = None, None
    return len(lines) - (1 if lines and lines[-1] == "" else 0), out


def main(argv):
    show_all = "--all" in argv
    dirs = [a for a in argv if not a.startswith("--")] or DIRS
    over = 0
    rows = []
    for d in dirs:
        for root, _, files in os.walk(d):
            if "/data" in root or root.endswith("data"):
                continue
            for fn in sorted(files):
                if not fn.endswith((".c", ".h")):
                    continue
                p = os.path.join(root, fn)
                n, funcs = functions(p)
                if n > MAX_FILE:
                    print(f"{p}: {n} lines (limit {MAX_FILE})")
                    over += 1
                for length, name, line in funcs:
                    rows.append((length, f"{p}:{line}: {name}"))
                    if length > MAX_FUNC:
                        print(f"{p}:{line}: function {name} is {length} lines (limit {MAX_FUNC})")
                        over += 1
    if show_all:
        for length, where in sorted(rows, reverse=True):
            print(f"{length:5d} {where}")
    if over:
        print(f"{over} over the limits")
        return 1
    print("sizes: every file and function within the limits")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
