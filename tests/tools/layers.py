#!/usr/bin/env python3
"""tests/tools/layers.py: the layering rules of gangsched, checked on #include lines.

    python3 tests/tools/layers.py            (make check-layers; run by make test)

Layers, bottom up (docs/architecture.md):
  core     sched/core, queue, plugins, and the config model (config/model.[ch], config/internal.h):
           pure, no I/O. May include only the config model of config/, no driver, no engine, no
           store, no I/O library (libuv, libcurl, SQLite, libyaml, cJSON, http-parser).
  engine   sched/engine: state between cycles, no I/O. Same bans as the core, the engine itself
           allowed.
  drivers  sched/kube (the daemon) and sched/sim (the simulator): neither includes the other;
           what both need belongs below them.

A violation prints "FILE:LINE: includes X: RULE" and fails. tests/tools/layers_known.txt lists
violations known and owned by someone ("FILE INCLUDE  # who fixes it"): they are printed as
KNOWN and do not fail, so the check guards against new ones meanwhile; a listed violation that
no longer occurs fails as stale, so that the list only shrinks.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')

IO_LIBS = re.compile(r'^(uv\.h|uv/|curl/|sqlite3\.h|yaml\.h|cjson/|cJSON\.h|http_parser\.h)')
DRIVERS = re.compile(r'^sched/(kube|sim|cmd|http)/')
CONFIG_NOT_MODEL = re.compile(r'^config/(?!model\.h$|internal\.h$)')

CORE_DIRS = ("sched/core/", "queue/", "plugins/")
CORE_FILES = ("config/model.c", "config/model.h", "config/internal.h")


def rules_for(path):
    """(pattern, message) pairs that an include of `path` must not match."""
    core = path.startswith(CORE_DIRS) or path in CORE_FILES
    engine = path.startswith("sched/engine/")
    out = []
    if core or engine:
        layer = "the core" if core else "the engine"
        out += [
            (DRIVERS, layer + " must not include a driver (sched/kube, sched/sim, sched/cmd, sched/http)"),
            (re.compile(r"^store/"), layer + " must not include the store"),
            (IO_LIBS, layer + " must not include an I/O library (libuv, libcurl, SQLite, libyaml, cJSON, http-parser)"),
            (CONFIG_NOT_MODEL, layer + " includes only the config model (config/model.h), not the loader"),
        ]
    if core:
        out.append((re.compile(r"^sched/engine/"), "the core must not include the engine"))
    if path.startswith("sched/kube/"):
        out.append((re.compile(r"^sched/sim/"), "sched/kube must not include sched/sim"))
    if path.startswith("sched/sim/"):
        out.append((re.compile(r"^sched/kube/"), "sched/sim must not include sched/kube"))
    return out


def sources():
    for top in ("sched", "queue", "plugins", "config", "store"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def known():
    out = {}
    path = os.path.join(ROOT, "tests/tools/layers_known.txt")
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            body, _, note = line.partition("#")
            words = body.split()
            if len(words) == 2:
                out[(words[0], words[1])] = note.strip()
    return out


def main():
    allowed = known()
    seen = set()
    bad = 0
    for path in sorted(sources()):
        rules = rules_for(path)
        if not rules:
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                for pat, why in rules:
                    if pat.search(inc):
                        if (path, inc) in allowed:
                            seen.add((path, inc))
                            print("KNOWN %s:%d: includes %s: %s (%s)" % (path, n, inc, why, allowed[(path, inc)]))
                        else:
                            print("%s:%d: includes %s: %s" % (path, n, inc, why))
                            bad += 1
                        break
    for key in sorted(set(allowed) - seen):
        print("tests/tools/layers_known.txt: %s includes %s no longer: remove the line (stale)" % key)
        bad += 1
    if bad:
        print("check-layers: %d violation(s)" % bad)
        return 1
    print("check-layers: ok (%d known violation(s) listed in tests/tools/layers_known.txt)" % len(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
