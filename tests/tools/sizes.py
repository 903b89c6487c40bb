#!/usr/bin/env python3
"""tests/tools/sizes.py: the size rules of the style guide, checked.

    python3 tests/tools/sizes.py [--all] [DIR...]

Lists every source file over 1,200 lines and every function over 120 lines. C: the .c and .h
files under the module directories (sched queue plugins config store) and under tests (the unit
tests, tools, benchmarks and fuzz harnesses: tests/unit tests/tools tests/bench tests/fuzz);
a function runs from the line of its name to its closing brace. Python: the .py files under
tests and docs; a function is a def (methods and nested defs included), from its def line to
the last line of its body (the parser's end_lineno). Data directories (sched/sim/data,
tests/data) and fuzz corpora (tests/fuzz/corpus) are never read. Given DIRs, both kinds are
checked there. Exits 1 when something is over (PY_ALLOW aside) or an allowlisted offender is
within the limits now (its entry must go), 0 otherwise. A C function is a definition that
starts in column 0 and ends at the next '}' in column 0 (clang-format keeps our code in that
shape); a table at file scope is data, not a function. --all prints every function's length,
longest first.
"""
import ast
import os
import re
import sys

MAX_FILE = 1200
MAX_FUNC = 120
DIRS = ["sched", "queue", "plugins", "config", "store"]
C_TEST_DIRS = ["tests/unit", "tests/tools", "tests/bench", "tests/fuzz"]
PY_DIRS = ["tests", "docs"]
# Python code over the limits when this check began to cover it: known debt, listed so that it
# stays visible and no new offender passes. (path, function or "" for the file's length). Split
# one and delete its line here; an entry within the limits fails the check until it is removed.
PY_ALLOW = set()  # none left; a new entry: {(path, function), ...}
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


def py_functions(path):
    """(lines, [(length, qualified name, def line)]) of a Python file: every def, methods as
    Class.name and nested defs as outer.name, from the def line (decorators aside) to the last
    line of its body."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = text.split("\n")
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out.append((child.end_lineno - child.lineno + 1, name, child.lineno))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(text, filename=path), "")
    return len(lines) - (1 if lines and lines[-1] == "" else 0), out


SKIP_DIRS = {"__pycache__", "data", "corpus"}  # bytecode, input data, fuzz corpora


def sources(dirs, exts):
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            subdirs[:] = sorted(x for x in subdirs if x not in SKIP_DIRS)
            if os.path.basename(os.path.normpath(root)) in SKIP_DIRS:
                continue
            for fn in sorted(files):
                if fn.endswith(exts):
                    yield os.path.join(root, fn)


def check(path, n, funcs, rows, allow=None):
    """Prints what is over the limits (allowlisted offenders aside, each recorded as seen in
    allow); returns how many were printed."""
    over = 0
    items = [(n, "", None, MAX_FILE)] + [(length, name, line, MAX_FUNC)
                                          for length, name, line in funcs]
    for length, name, line, limit in items:
        if line is not None:
            rows.append((length, f"{path}:{line}: {name}"))
        if length <= limit:
            continue
        if allow is not None and (path, name) in allow:
            allow[(path, name)] = True
            continue
        if line is None:
            print(f"{path}: {n} lines (limit {MAX_FILE})")
        else:
            print(f"{path}:{line}: function {name} is {length} lines (limit {MAX_FUNC})")
        over += 1
    return over


def main(argv):
    show_all = "--all" in argv
    given = [a for a in argv if not a.startswith("--")]
    over = 0
    rows = []
    for p in sources(given or DIRS + C_TEST_DIRS, (".c", ".h")):
        n, funcs = functions(p)
        over += check(p, n, funcs, rows)
    seen = {k: False for k in PY_ALLOW}
    scanned = set()
    for p in sources(given or PY_DIRS, ".py"):
        p = os.path.normpath(p)
        scanned.add(p)
        try:
            n, funcs = py_functions(p)
        except SyntaxError as e:
            print(f"{p}:{e.lineno}: cannot parse: {e.msg}")
            over += 1
            continue
        over += check(p, n, funcs, rows, seen)
    for (p, name), hit in sorted(seen.items()):
        if not hit and (p in scanned or not given):
            print(f"{p}: {name or 'the file'} is within the limits now (or gone): remove it "
                  "from PY_ALLOW")
            over += 1
    if show_all:
        for length, where in sorted(rows, reverse=True):
            print(f"{length:5d} {where}")
    if over:
        print(f"{over} over the limits")
        return 1
    allowed = sum(seen.values())
    offenders = "offender" if allowed == 1 else "offenders"
    print("sizes: every file and function within the limits"
          + (f" ({allowed} known Python {offenders} allowlisted in PY_ALLOW)" if allowed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
