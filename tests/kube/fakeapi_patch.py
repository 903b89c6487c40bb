"""tests/kube/fakeapi_patch.py: the three patch types of the fake API server.

Owns: JSON merge patch (RFC 7386), strategic merge patch with the list merge keys and
directives kubectl apply needs (after apimachinery's strategicpatch), and JSON patch
(RFC 6902, with evanphx/json-patch's error texts and limits as kube-apiserver uses it).
Pure functions on decoded JSON; errors are ApiError.
"""

import copy
import re
import sys
from fakeapi_base import ApiError


# --------------------------------------------------------------------------------------------
# Patches: JSON merge (RFC 7386), strategic merge (the list keys kubectl apply needs),
# JSON patch (RFC 6902).


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "env": "name", "volumes": "name", "volumeMounts": "mountPath",
              "volumeDevices": "devicePath", "imagePullSecrets": "name", "conditions": "type",
              "ownerReferences": "uid", "hostAliases": "ip", "resourceClaims": "name",
              "schedulingGates": "name", "addresses": "type", "ports": None,
              # ResourceClaimStatus.reservedFor: patchMergeKey uid, patchStrategy merge (so
              # kube-scheduler's Unreserve deletes one entry by {"$patch": "delete", "uid": ...})
              "reservedFor": "uid"}
PRIMITIVE_SETS = {"finalizers"}


def strip_directives(v):
    if isinstance(v, dict):
        return {k: strip_directives(x) for k, x in v.items()
                if not k.startswith("$")}
    if isinstance(v, list):
        return [strip_directives(x) for x in v]
    return v


def strategic_merge(orig, patch):
    if not isinstance(patch, dict):
        return strip_directives(patch)
    if patch.get("$patch") == "replace":
        return strip_directives(patch)
    result = dict(orig) if isinstance(orig, dict) else {}
    orders = {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            result[field] = [x for x in result.get(field) or [] if x not in v]
            continue
        if k.startswith("$"):
            continue
        if v is None:
            result.pop(k, None)
        elif isinstance(v, dict):
            if v.get("$patch") == "delete":
                result.pop(k, None)
            else:
                result[k] = strategic_merge(result.get(k), v)
        elif isinstance(v, list) and k in MERGE_KEYS:
            result[k] = merge_list(k, result.get(k) or [], v)
        elif isinstance(v, list) and k in PRIMITIVE_SETS:
            cur = list(result.get(k) or [])
            result[k] = cur + [x for x in v if x not in cur]
        else:
            result[k] = strip_directives(v)
    for field, order in orders.items():
        result[field] = reorder(field, result.get(field) or [], order)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def list_key(field, items):
    key = MERGE_KEYS[field]
    if key is None:  # ports: containerPort in containers, port in services
        key = "containerPort" if any(isinstance(i, dict) and "containerPort" in i
                                     for i in items) else "port"
    return key


def merge_list(field, cur, patch):
    if not all(isinstance(x, dict) for x in patch) or not all(isinstance(x, dict) for x in cur):
        return strip_directives(patch)
    if any(x.get("$patch") == "replace" for x in patch):
        return strip_directives([x for x in patch if x.get("$patch") != "replace"])
    key = list_key(field, list(cur) + list(patch))
    result = list(cur)
    for pe in patch:
        idx = next((i for i, e in enumerate(result) if e.get(key) == pe.get(key)), None)
        if pe.get("$patch") == "delete":
            if idx is not None:
                del result[idx]
        elif idx is not None:
            result[idx] = strategic_merge(result[idx], pe)
        else:
            result.append(strip_directives(pe))
    return result


def reorder(field, items, order):
    if not items or not all(isinstance(x, dict) for x in items):
        return [x for x in order if x in items] + [x for x in items if x not in order]
    key = list_key(field, items)
    want = [o.get(key) for o in order if isinstance(o, dict)]
    ranked = sorted(items, key=lambda e: want.index(e.get(key)) if e.get(key) in want
                    else len(want))
    return ranked


# JSON patch (RFC 6902) as kube-apiserver applies it. handlers/patch.go (applyJSPatch) decodes
# the body with gopkg.in/evanphx/json-patch.v4 (v4.12.0; Kubernetes stays on v4 on purpose,
# hack/unwanted-dependencies.json) and:
# - a body that is not a JSON list of objects: 400 BadRequest (DecodePatch);
# - more than 10,000 operations: 413 RequestEntityTooLarge (maxJSONPatchOperations);
# - any error of Patch.Apply: NewGenericServerResponse(422, ...) with isUnexpectedResponse
#   false, i.e. 422, reason Invalid, the fixed message below and empty details: the library's
#   own text does not reach the client (we print it on stderr for whoever debugs a test).
# The library's rules, copied here:
# - an unknown or missing "op" is an error ("Unexpected kind"), so 422 like the rest;
# - an array index is what strconv.Atoi reads (an optional sign and decimal digits);
#   SupportNegativeIndices is on: a negative index counts from the end. add takes 0..len or
#   "-" (append) or -(len+1)..-1; get, remove, replace, test, move and copy take
#   -len..len-1. Anything else is refused, never clamped (Python's list.insert clamps);
# - a missing object member: remove refuses; replace sets it (v4's partialDoc.get never fails,
#   so replace works as add: the RFC says it must fail, v5 does, v4 does not, and Kubernetes
#   keeps v4 for exactly that); test passes only when the value is null; copy copies null;
#   move refuses (its remove fails);
# - an op without "value" uses null; the empty path may be replaced (by an object) or tested;
# - a path not starting with "/": v4 silently drops its first segment; we refuse it (422), as
#   a client sending one has a bug.
JSON_PATCH_MSG = "the server rejected our request due to an error in our request"
JSON_PATCH_MAX_OPS = 10000
_ATOI = re.compile(r"[+-]?[0-9]+")


class _PatchFailed(Exception):
    pass


def pointer(path):
    if path == "":
        return []
    if not isinstance(path, str) or not path.startswith("/"):
        raise _PatchFailed(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(key, n):
    """an array index by evanphx's rules for an array of n elements (n+1 for add)."""
    if not _ATOI.fullmatch(key):
        raise _PatchFailed(f"value was not a proper array index: {key!r}")
    idx = int(key)
    if idx < 0:
        idx += n
    if not 0 <= idx < n:
        raise _PatchFailed(f"Unable to access invalid index: {key}")
    return idx


def _json_kind(v):
    """the JSON type name encoding/json's UnmarshalTypeError gives."""
    if isinstance(v, bool):
        return "bool"
    return {dict: "object", list: "array", str: "string"}.get(type(v), "number")


def _json_equal(a, b):
    """JSON equality: true is not 1, and 1 is not 1.0 (v4 compares a scalar's bytes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return a == b


def json_patch(doc, ops):
    if ops is None:  # encoding/json reads null into a nil (empty) Patch
        ops = []
    bad = ops if not isinstance(ops, list) else \
        next((o for o in ops if o is not None and not isinstance(o, dict)), None)
    if bad is not None or not isinstance(ops, list):
        raise ApiError(400, f"json: cannot unmarshal {_json_kind(bad)} into Go value of type "
                            f"jsonpatch.{'Patch' if bad is ops else 'Operation'}")
    if len(ops) > JSON_PATCH_MAX_OPS:
        raise ApiError(413, f"Request entity too large: The allowed maximum operations in a "
                            f"JSON patch is {JSON_PATCH_MAX_OPS}, got {len(ops)}")
    root = [copy.deepcopy(doc)]  # a box, so that replacing the empty path is one assignment

    def parent(path):
        """the container holding path's last segment, and that segment."""
        parts = pointer(path)
        if not parts:
            raise _PatchFailed("doc is missing path: \"\"")
        node = root[0]
        for p in parts[:-1]:
            if isinstance(node, list):
                node = node[_index(p, len(node))]
            elif isinstance(node, dict) and p in node:
                node = node[p]
            else:
                raise _PatchFailed(f"doc is missing path: {path}")
            if not isinstance(node, (dict, list)):
                raise _PatchFailed(f"doc is missing path: {path}")
        return node, parts[-1]

    def get(path):
        if path == "":
            return root[0]
        node, last = parent(path)
        if isinstance(node, list):
            return node[_index(last, len(node))]
        return node.get(last)  # a missing member reads as null

    def add(path, value):
        node, last = parent(path)
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else _index(last, len(node) + 1), value)
        else:
            node[last] = value

    def remove(path):
        node, last = parent(path)
        if isinstance(node, list):
            return node.pop(_index(last, len(node)))
        if last not in node:
            raise _PatchFailed(f"Unable to remove nonexistent key: {last}")
        return node.pop(last)

    def replace(path, value):
        if path == "":
            if not isinstance(value, (dict, list)):
                raise _PatchFailed("replace operation value must be object or array")
            root[0] = value
            return
        node, last = parent(path)
        if isinstance(node, list):
            node[_index(last, len(node))] = value
        else:
            node[last] = value  # v4: a missing member is set, not refused

    for op in ops:
        op = op or {}
        kind, path, value = op.get("op"), op.get("path"), copy.deepcopy(op.get("value"))
        try:
            if path is None and kind in ("add", "remove", "replace", "move", "copy", "test"):
                raise _PatchFailed("operation missing path field")
            if kind == "add":
                add(path, value)
            elif kind == "remove":
                remove(path)
            elif kind == "replace":
                replace(path, value)
            elif kind == "move":
                add(path, remove(op.get("from")))
            elif kind == "copy":
                add(path, copy.deepcopy(get(op.get("from"))))
            elif kind == "test":
                if not _json_equal(get(path), value):
                    raise _PatchFailed(f"testing value {path} failed")
            else:
                raise _PatchFailed(f"Unexpected kind: {kind if isinstance(kind, str) else '?'}")
        except (_PatchFailed, TypeError) as e:
            sys.stderr.write(f"fakeapi: json patch {kind} {path}: {e}\n")
            raise ApiError(422, JSON_PATCH_MSG, details={})
    return root[0]
