#!/usr/bin/env python3
"""tests/kube/rbac_check.py: deploy/rbac.yaml against the requests gangsched really made.

Usage: rbac_check.py RBAC_YAML REQUEST_LOG

REQUEST_LOG is what tests/kube/fakeapi.py appends to $FAKEAPI_REQUEST_LOG (METHOD, target,
User-Agent; tab-separated); only requests whose User-Agent starts with "gangsched/" count (the
tests' own clients and kubectl are left out). Each request is turned into an authorization
attribute the way kube-apiserver's RequestInfoResolver does (k8s.io/apiserver/pkg/endpoints/
request/requestinfo.go): apiGroup, resource, subresource, namespace, name and verb (GET on a
collection is list, or watch with ?watch=true; GET on a name is get, or watch; POST create; PUT
update; PATCH patch; DELETE delete, or deletecollection on a collection).

Checks, each printed:
  - every request is allowed by a rule (the ClusterRole anywhere; the Role for the Lease, its
    resourceNames honoured except for create, which RBAC cannot limit by name);
  - every (apiGroup, resource, verb) the rules grant was requested at least once: nothing is
    granted that the code does not call (a streaming list, a watch with sendInitialEvents=true,
    also needs list: a server that refuses it is listed in pages, as e2e.py's does).
Discovery (/api, /apis, /version, /openapi/...) is granted to every authenticated user by the
built-in system:discovery role and is not checked. Exit 0 when both hold, 1 otherwise.
"""

import sys
from urllib.parse import parse_qs, urlsplit

import yaml

DISCOVERY = ("/api", "/apis", "/version", "/openapi", "/healthz", "/livez", "/readyz")


def request_info(method, target):
    """(group, resource, subresource, namespace, name, verb), or None for a non-resource URL."""
    url = urlsplit(target)
    parts = [p for p in url.path.split("/") if p]
    q = parse_qs(url.query)
    if not parts or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        group, rest = "", parts[2:]  # /api/v1/...
    else:
        if len(parts) < 3:
            return None
        group, rest = parts[1], parts[3:]  # /apis/GROUP/VERSION/...
    if not rest:
        return None
    ns = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, rest = rest[1], rest[2:]
    elif rest[0] == "namespaces":  # the namespaces resource itself
        ns = ""
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    watch = q.get("watch", ["false"])[0] in ("true", "1")
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)
    if method == "GET":
        verb = "watch" if watch else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    return group, resource, sub, ns, name, verb


def rules_of(docs):
    """[(kind, namespace, rule)] of the ClusterRoles and Roles."""
    out = []
    for d in docs:
        if d and d.get("kind") in ("ClusterRole", "Role"):
            for r in d.get("rules") or []:
                out.append((d["kind"], d.get("metadata", {}).get("namespace", ""), r))
    return out


def allows(rule, group, res, verb, name):
    if group not in rule.get("apiGroups", []) and "*" not in rule.get("apiGroups", []):
        return False
    if res not in rule.get("resources", []) and "*" not in rule.get("resources", []):
        return False
    if verb not in rule.get("verbs", []) and "*" not in rule.get("verbs", []):
        return False
    names = rule.get("resourceNames") or []
    return not names or verb == "create" or name in names


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: rbac_check.py RBAC_YAML REQUEST_LOG")
    with open(sys.argv[1], encoding="utf-8") as f:
        rules = rules_of(list(yaml.safe_load_all(f)))
    used = {}
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 3 or not fields[2].startswith("gangsched/"):
                continue
            info = request_info(fields[0], fields[1])
            if info is None:
                continue
            group, resource, sub, ns, name, verb = info
            res = resource + ("/" + sub if sub else "")
            key = (group, res, verb)
            used.setdefault(key, (ns, name, fields[0] + " " + fields[1]))
            if verb == "watch" and "sendInitialEvents=true" in fields[1]:
                # a streaming list needs list too: on a server that refuses it (the WatchList
                # gate off) the informer lists the collection in pages instead
                used.setdefault((group, res, "list"),
                                (ns, name, "the fallback of " + fields[0] + " " + fields[1]))
            if (group, res) == ("resource.k8s.io", "resourceclaims/status"):
                # from 1.36 kube-apiserver also authorizes a write of allocation or reservedFor
                # as the synthetic resourceclaims/binding with the same verb (issue 17)
                used.setdefault((group, "resourceclaims/binding", verb),
                                (ns, name, fields[0] + " " + fields[1]))
    if not used:
        print("FAIL no request from gangsched in the log")
        return 1
    bad = 0
    for (group, res, verb), (ns, name, example) in sorted(used.items()):
        # a Role grants in its namespace; the Lease's namespace is the pod's (POD_NAMESPACE),
        # which the tests choose freely, so the Role is taken to be there
        ok = any(allows(r, group, res, verb, name) for _, _, r in rules)
        print("%s %s %s.%s (e.g. %s)" % ("ok  " if ok else "FAIL", verb, res, group or "core",
                                          example))
        bad += not ok
    for kind, _, r in rules:
        for group in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for verb in r.get("verbs", []):
                    if (group, res, verb) not in used:
                        print("FAIL %s grants %s %s.%s, which gangsched never requested"
                              % (kind, verb, res, group or "core"))
                        bad += 1
    print("%d request kinds checked, %d problem(s)" % (len(used), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
