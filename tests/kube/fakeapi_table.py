"""Server-side printing of custom resources, as kube-apiserver answers `kubectl get` (which asks
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...;v=v1beta1..., application/json`).

What each part copies (read upstream):
- the columns: apiextensions-apiserver registry/customresource/tableconvertor New: "Name"
  (type string, format name), then the version's additionalPrinterColumns in order (name,
  type, format, description or "Custom resource definition column (in JSONPath format): P",
  priority); a version without any gets one "Age" column (type date,
  .metadata.creationTimestamp: the CRD handler's serveDefaultColumnsIfEmpty);
- the cells: ConvertToTable: the name, then per column the first result of its simple JSONPath
  (missing: null); a string column prints whatever it finds as client-go jsonpath does (a
  string as is, a map or list as compact JSON, other values as text); the other types by
  cellForJSONValue (integer: a whole or truncated number; number: a number; boolean; date:
  the age of an RFC 3339 time by apimachinery's ShortHumanDuration via
  ConvertToHumanReadableDateType, "<invalid>" when it does not parse, "<unknown>" when empty;
  a value of another type: null);
- the table: kind Table in the negotiated meta.k8s.io version (v1 or v1beta1), metadata
  resourceVersion and, for a list, continue and remainingItemCount; each row's object by
  `includeObject` (apiserver endpoints/handlers/response.go asTable): Metadata or absent: a
  PartialObjectMetadata of the Table's version; Object: the object; None: null; another
  value: 400 `unrecognized includeObject value: "X"`.
Not copied: tables of built-in kinds (their printers are kube-apiserver's Go code; those
answer plain JSON here, and kubectl prints NAME and AGE), tables on watches (`kubectl get -w`
reads plain events), column conditions.
"""
import calendar
import json
import re
import time

from fakeapi_base import ApiError

TABLE_GROUP = "meta.k8s.io"
NAME_DESCRIPTION = ("Name must be unique within a namespace. Is required when creating "
                    "resources, although some resources may allow a client to request the "
                    "generation of an appropriate name automatically. Name is primarily "
                    "intended for creation idempotence and configuration definition. Cannot "
                    "be updated.")
AGE_DESCRIPTION = ("CreationTimestamp is a timestamp representing the server time when this "
                   "object was created.")


def table_version(accept):
    """The meta.k8s.io version of the Table the Accept header asks for before any plain JSON,
    or None: media types in the client's order, as kube-apiserver's negotiation reads kubectl's
    list (q-values are not weighed)."""
    for part in (accept or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        media, params = fields[0].lower(), {}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            params[k.strip().lower()] = v.strip()
        if media not in ("application/json", "application/*", "*/*"):
            continue
        if "as" not in params:
            return None
        if params.get("as") == "Table" and params.get("g") == TABLE_GROUP and \
                params.get("v") in ("v1", "v1beta1"):
            return params["v"]
    return None


def columns(printer_columns):
    """The Table's column definitions and, per additional column, its (type, path)."""
    heads = [{"name": "Name", "type": "string", "format": "name",
              "description": NAME_DESCRIPTION, "priority": 0}]
    cols = list(printer_columns or [])
    if not cols:
        cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                 "description": AGE_DESCRIPTION}]
    specs = []
    for c in cols:
        path = c.get("jsonPath") or ""
        heads.append({"name": c.get("name") or "", "type": c.get("type") or "",
                      "format": c.get("format") or "",
                      "description": c.get("description") or
                      f"Custom resource definition column (in JSONPath format): {path}",
                      "priority": int(c.get("priority") or 0)})
        specs.append((c.get("type") or "", parse_path(path)))
    return heads, specs


_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")


def parse_path(path):
    """A simple JSONPath (.a.b, .a[0], .a['b.c']) as steps; None when it is not one."""
    steps, at = [], 0
    while at < len(path):
        m = _STEP.match(path, at)
        if not m:
            return None
        steps.append(int(m.group(2)) if m.group(2) is not None else
                     (m.group(1) if m.group(1) is not None else m.group(3)))
        at = m.end()
    return steps


def find(obj, steps):
    """(True, value) at the steps, or (False, None) when a key is missing."""
    if steps is None:
        return False, None
    for s in steps:
        if isinstance(s, int):
            if not isinstance(obj, list) or s >= len(obj):
                return False, None
            obj = obj[s]
        elif isinstance(obj, dict) and s in obj:
            obj = obj[s]
        else:
            return False, None
    return True, obj


def short_duration(seconds):
    """apimachinery util/duration ShortHumanDuration of a duration in seconds."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    hours = s // 3600
    if hours < 24:
        return f"{hours}h"
    if hours < 24 * 365:
        return f"{hours // 24}d"
    return f"{hours // 24 // 365}y"


def age(text, now):
    """The age cell of an RFC 3339 time (metav1.Time's UnmarshalQueryParameter)."""
    if text in ("", "null"):
        return "<unknown>"
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", text)
    if not m:
        return "<invalid>"
    try:
        t = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return "<invalid>"
    t += float(m.group(7) or 0)
    if m.group(8) != "Z":
        sign = 1 if m.group(8)[0] == "+" else -1
        t -= sign * (int(m.group(8)[1:3]) * 3600 + int(m.group(8)[4:6]) * 60)
    return short_duration(now - t)


def text_of(v):
    """client-go jsonpath's PrintResults of one value: maps and lists as compact JSON, the
    rest as Go's fmt prints it."""
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return str(int(v))
    return str(v)


def cell(kind, steps, obj, now):
    found, v = find(obj, steps)
    if not found:
        return None
    if v is None:
        return None
    if kind == "string":
        return text_of(v)
    if isinstance(v, bool) and kind in ("integer", "number"):
        return None
    if kind == "integer" and isinstance(v, (int, float)):
        return int(v)
    if kind == "number" and isinstance(v, (int, float)):  # Go writes a whole float64 as 3
        return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e21 else v
    if kind == "boolean" and isinstance(v, bool):
        return v
    if kind == "date" and isinstance(v, str):
        return age(v, now)
    return None


def row_object(obj, include, version):
    if include == "Object":
        return obj
    if include == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": f"{TABLE_GROUP}/{version}",
            "metadata": obj.get("metadata") or {}}


def as_table(raw, printer_columns, version, include):
    """The Table of one object or a list (raw: the JSON the plain answer would be)."""
    if include not in (None, "", "Metadata", "Object", "None"):
        raise ApiError(400, f'unrecognized includeObject value: "{include}"')
    doc = json.loads(raw)
    heads, specs = columns(printer_columns)
    now = time.time()
    meta = doc.get("metadata") or {}
    items = doc.get("items") if "items" in doc and isinstance(doc.get("items"), list) else [doc]
    rows = []
    for obj in items:
        name = (obj.get("metadata") or {}).get("name", "")
        rows.append({"cells": [name] + [cell(k, s, obj, now) for k, s in specs],
                     "object": row_object(obj, include, version)})
    out_meta = {"resourceVersion": meta.get("resourceVersion", "")}
    if "items" in doc:
        if meta.get("continue"):
            out_meta["continue"] = meta["continue"]
        if meta.get("remainingItemCount") is not None:
            out_meta["remainingItemCount"] = meta["remainingItemCount"]
    return json.dumps({"kind": "Table", "apiVersion": f"{TABLE_GROUP}/{version}",
                       "metadata": out_meta, "columnDefinitions": heads,
                       "rows": rows}).encode()
