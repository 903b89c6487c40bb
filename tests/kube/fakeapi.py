#!/usr/bin/env python3
"""tests/kube/fakeapi.py: a fake Kubernetes API server for tests and benchmarks (stdlib only).

The entry point: `python3 tests/kube/fakeapi.py ARGS`. It serves an in-memory object store
with a global resourceVersion counter and a bounded watch history; the REST surface of the
resources in RESOURCES (get, list, watch, create, update, patch, delete) with the subresources a
scheduler uses (pods/binding, pods/status, pods/eviction, <crd>/status); discovery and a
minimal OpenAPI v3 document so that the real kubectl works with default validation; TLS with a
self-signed CA made by the openssl command, bearer-token authentication; an optional simulated
kubelet; fault injection and counters under /_fake/. Listens on 127.0.0.1 only.

Owns (this file): argument parsing, certificates and the kubeconfig, server start and stop,
loading objects, discovery and OpenAPI documents, and the HTTP handler (routing,
authentication, request bodies, watches with bookmarks, the /_fake/ control API). The rest is
in sibling modules: fakeapi_base.py (resource table, errors, selectors), fakeapi_patch.py
(patches), fakeapi_store.py (counters, faults, the store), fakeapi_admit.py (validation and
admission), fakeapi_dra.py (resourceclaim controller, claim validation), fakeapi_kubelet.py
(the simulated kubelet).

Must not: talk to anything but loopback clients, or pretend to validate objects against
schemas (it checks names, namespaces, kinds and a few rules the scheduler depends on; custom
objects are pruned by their CRD's structural schema, as kube-apiserver does, not validated).
Custom resources are served only while a test has installed their CRD.

Usage and the fault API: docs/test-api-server.md.
"""

import argparse
import base64
import email.utils
import json
import os
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit
from fakeapi_dra import PG_CLAIMS_GATE
from fakeapi_base import (ApiError, BY_KEY, BY_PATH, CRD_COLUMNS, GATES_ON, RESOURCES, SERVED_GATED, WATCHLIST_GATE, dumps, fields_match,
    labels_match, log_request, now_time, parse_field_selector, parse_label_selector)
from fakeapi_admit import (LEASE_KEY, _WARNINGS, check_list_options, check_name, find_kind,
    prepare_create, served)
from fakeapi_store import Entry, Faults, Stats, Store, parse_fault_spec
from fakeapi_kubelet import Kubelet
from fakeapi_table import BUILT_IN, as_table, table_version


# --------------------------------------------------------------------------------------------
# Discovery and OpenAPI.

MAIN_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def group_versions():
    """The served group-versions, in table order (custom ones only while their CRD is)."""
    seen = []
    for r in RESOURCES:
        if served(r) and (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen




def resource_list(group, version):
    out = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version) or not served(r):
            continue
        e = {"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
             "kind": r.kind, "verbs": MAIN_VERBS}
        if r.short:
            e["shortNames"] = r.short
        if r.categories:
            e["categories"] = r.categories
        out.append(e)
        if r.status:
            out.append({"name": r.plural + "/status", "singularName": "",
                        "namespaced": r.namespaced, "kind": r.kind,
                        "verbs": ["get", "patch", "update"]})
        for s in r.subs:
            kind, grp, ver = {"binding": ("Binding", "", "v1"),
                              "eviction": ("Eviction", "policy", "v1")}[s]
            e = {"name": f"{r.plural}/{s}", "singularName": "", "namespaced": r.namespaced,
                 "kind": kind, "verbs": ["create"]}
            if grp:
                e["group"], e["version"] = grp, ver
            out.append(e)
    if (group, version) == ("", "v1"):
        out.append({"name": "bindings", "singularName": "binding", "namespaced": True,
                    "kind": "Binding", "verbs": ["create"]})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}


def api_group(group):
    versions = [{"groupVersion": f"{g}/{v}", "version": v} for g, v in group_versions()
                if g == group]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list():
    groups = [api_group(g) for g in dict.fromkeys(g for g, _ in group_versions() if g)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def openapi_v3_index():
    paths = {}
    for g, v in group_versions():
        p = f"apis/{g}/{v}" if g else f"api/{v}"
        paths[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash=FAKE{len(RESOURCES)}"}
    return {"paths": paths}


def openapi_v3_doc(group, version):
    """PATCH operations with the fieldValidation parameter: kubectl then validates server-side.
    No strategic-merge media type, so kubectl apply uses its compiled-in types for patches."""
    params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
              for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
    paths = {}
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        base = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
        p = f"{base}/namespaces/{{namespace}}/{r.plural}/{{name}}" if r.namespaced \
            else f"{base}/{r.plural}/{{name}}"
        paths[p] = {"patch": {
            "operationId": f"patch{r.kind}",
            "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version,
                                                 "kind": r.kind},
            "x-kubernetes-action": "patch",
            "parameters": params,
            "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in (
                "application/json-patch+json", "application/merge-patch+json",
                "application/apply-patch+yaml")}},
            "responses": {"200": {"description": "OK"}}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}


def pb_field(num, data):
    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out
    return varint((num << 3) | 2) + varint(len(data)) + data


# The smallest OpenAPI v2 document in gnostic's protobuf form (swagger, info, empty paths and
# definitions): old kubectl versions validate against it, and every kind passes.
OPENAPI_V2_PB = (pb_field(1, b"2.0") + pb_field(2, pb_field(1, b"Kubernetes") +
                                               pb_field(2, b"v1.32.0"))
                 + pb_field(8, b"") + pb_field(9, b""))
OPENAPI_V2_JSON = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                   "paths": {}, "definitions": {}}
VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0",
           "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
           "buildDate": "2024-12-11T00:00:00Z", "goVersion": "go1.23.3", "compiler": "gc",
           "platform": "linux/amd64"}

# --------------------------------------------------------------------------------------------
# HTTP.

PUBLIC = {"/version", "/healthz", "/livez", "/readyz"}
HTTP_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 400: "Bad Request",
                401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                405: "Method Not Allowed", 409: "Conflict", 410: "Gone",
                415: "Unsupported Media Type", 422: "Unprocessable Entity",
                429: "Too Many Requests", 500: "Internal Server Error",
                503: "Service Unavailable", 504: "Gateway Timeout"}


class Headers(dict):
    """Request headers by lower-case name (the stdlib's email parser is the slow part of a
    request)."""

    def get(self, key, default=None):
        return dict.get(self, key.lower(), default)


class Watch:
    """One watch request (Handler.watch): what it selects, the faults it took (drop-watch,
    gone-watch, stall-watch), its cursor in the store's history (None once it has ended), its
    deadlines and how many events it has sent."""

    def __init__(self, app, res, ns, name, q, path):
        self.app, self.store, self.res, self.key, self.ns = app, app.store, res, res.key, ns
        self.lsel = parse_label_selector(q.get("labelSelector"))
        self.fsel = parse_field_selector(res, q.get("fieldSelector"))
        if name:
            self.fsel.append((("metadata.name", ""), True, name))
        self.timeout = float(q.get("timeoutSeconds") or app.watch_timeout)
        self.bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        self.drop = app.faults.take("drop-watch", "watch", path)
        self.gone = app.faults.take("gone-watch", "watch", path)
        self.stall = app.faults.take("stall-watch", "watch", path)
        self.cursor = None
        self.sent = 0

    def matches(self, obj):
        if obj is None:
            return False
        if self.ns is not None and obj["metadata"].get("namespace") != self.ns:
            return False
        if self.lsel and not labels_match(self.lsel, obj["metadata"].get("labels")):
            return False
        return not self.fsel or fields_match(self.fsel, obj)

    def matches_entry(self, e):
        """matches() of a stored Entry, its field selector read from the entry's field set."""
        meta = e.obj["metadata"]
        if self.ns is not None and meta.get("namespace") != self.ns:
            return False
        if self.lsel and not labels_match(self.lsel, meta.get("labels")):
            return False
        return not self.fsel or e.fields_match(self.fsel)

    def error_line(self, rv_text, oldest):
        self.app.stats.add("watch_expired")
        st = ApiError(410, f"too old resource version: {rv_text} ({oldest})").status()
        return dumps({"type": "ERROR", "object": st}) + b"\n"

    def bookmark(self, rv, initial_end=False):
        meta = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return dumps({"type": "BOOKMARK", "object": {"kind": self.res.kind,
                                                    "apiVersion": self.res.api_version,
                                                    "metadata": meta}}) + b"\n"

    def initial_events(self, q):
        """What is sent first: the stored objects sent as ADDED (from resourceVersion "" or "0",
        or with sendInitialEvents; Entry objects, never changed once stored, so the snapshot is
        taken under the lock and sent without it), then lines (the BOOKMARK ending a streaming
        list's initial events; an ERROR 410 from an expired version or with gone-watch); and the
        cursor they leave. A resourceVersion that is not a number is a 400."""
        store, rv_param, first, added = self.store, q.get("resourceVersion") or "", [], []
        with store.lock:
            if self.gone:
                first.append(self.error_line(rv_param or "0", store.compacted))
                self.cursor = None
            elif rv_param in ("", "0") or q.get("sendInitialEvents") == "true":
                # from the stored objects as a list reads them: the sorted keys kept, each
                # object's field set (Entry.fields_match), as the watch cache's store
                table = store.objects[self.key]
                added = [e for e in (table[k] for k in store._sorted_keys(self.key))
                         if self.matches_entry(e)]
                self.cursor = store.rv
                if q.get("sendInitialEvents") == "true" and self.bookmarks:
                    first.append(self.bookmark(self.cursor, initial_end=True))
            elif not rv_param.isdigit():
                raise ApiError(400, f"invalid resourceVersion {rv_param!r}")
            else:
                self.cursor = int(rv_param)
                if self.cursor < store.compacted:
                    first.append(self.error_line(rv_param, store.compacted))
                    self.cursor = None
        return added, first

    def start(self):
        """The deadlines, from now (the answer's headers sent): timeoutSeconds, drop-watch's
        afterSeconds, stall-watch's afterSeconds; drop-watch's afterEvents; the next bookmark."""
        start = time.monotonic()
        self.deadline = start + self.timeout
        if self.drop and self.drop.get("afterSeconds") is not None:
            self.deadline = min(self.deadline, start + self.drop["afterSeconds"])
        if self.stall:
            self.deadline = min(self.deadline, start + self.stall.get("afterSeconds", 0.0))
        self.drop_after = self.drop.get("afterEvents") if self.drop else None
        self.next_bookmark = start + self.app.bookmark_interval

    def dropped(self):
        """drop-watch's afterEvents are sent."""
        return self.drop_after is not None and self.sent >= self.drop_after

    def cut(self, lines):
        """lines, cut to what drop-watch's afterEvents still allows."""
        return lines if self.drop_after is None else lines[:max(0, self.drop_after - self.sent)]

    def wait(self):
        """Waits (store.lock held) for an event of this resource after the cursor, or for a
        periodic bookmark's time; False, the cursor None, once the deadline passes or the store
        stops. Periodic bookmarks only for a type with an event (store.evented)."""
        store = self.store
        while True:
            now = time.monotonic()
            if store.stopping or now >= self.deadline:
                self.cursor = None
                return False
            if store.last_rv.get(self.key, 0) > self.cursor:
                return True
            ticks = self.bookmarks and self.key in store.evented
            if ticks and now >= self.next_bookmark:
                return True
            wake = min(self.deadline, self.next_bookmark) if ticks else self.deadline
            store.conds[self.key].wait(max(0.001, wake - now))

    def next_lines(self):
        """The next lines to send: this resource's events after the cursor that match (an ERROR
        410 when the history no longer reaches back to the cursor), and a bookmark when one is
        due. [] once the watch has ended (the cursor None)."""
        store, out = self.store, []
        with store.lock:
            if not self.wait():
                return out
            # Nothing of this resource since the cursor: it moves to now, whatever other
            # resources did meanwhile (their history may have been trimmed past the cursor;
            # that does not expire this watch).
            quiet = store.last_rv.get(self.key, 0) <= self.cursor
            evs = [] if quiet else store.events_since(self.cursor)
            if evs is None:
                out.append(self.error_line(str(self.cursor), store.compacted))
                self.cursor = None
                return out
            for ev in evs:
                if ev.key != self.key:
                    continue
                line = Handler.event_line(ev, self.matches)
                if line:
                    out.append(line)
            self.cursor = store.rv
            if (self.bookmarks and self.key in store.evented
                    and time.monotonic() >= self.next_bookmark):
                out.append(self.bookmark(self.cursor))
                self.next_bookmark = time.monotonic() + self.app.bookmark_interval
        return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 900  # idle keep-alive connections are closed after this many seconds
    server_version = "fakeapi/1"

    def setup(self):
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def parse_request(self):
        """The request line and headers, without the email parser; sets what
        BaseHTTPRequestHandler.handle_one_request needs (command, path, close_connection)."""
        self.command = None
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        parts = self.requestline.split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self.request_version = "HTTP/1.1"
            self.send_bytes(400, dumps(ApiError(400, "bad request line").status()))
            return False
        self.command, self.path, self.request_version = parts
        headers = Headers()
        for _ in range(200):
            line = self.rfile.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("iso-8859-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        self.headers = headers
        conn = headers.get("connection", "").lower()
        self.close_connection = conn == "close" or (self.request_version == "HTTP/1.0"
                                                    and conn != "keep-alive")
        if headers.get("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        return True

    def log_message(self, fmt, *args):
        if self.server.app.verbose:
            sys.stderr.write("fakeapi: %s\n" % (fmt % args))

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    # ---- plumbing

    def send_bytes(self, code, body, ctype="application/json", headers=None):
        head = [f"HTTP/1.1 {code} {HTTP_REASONS.get(code, 'Status')}",
                f"Content-Type: {ctype}", f"Content-Length: {len(body)}",
                "Cache-Control: no-cache, private"]
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}")
        for w in getattr(_WARNINGS, "list", None) or []:  # warning.AddWarning's header form
            head.append('Warning: 299 - "%s"' % w.replace("\\", "\\\\").replace('"', '\\"'))
        _WARNINGS.list = None
        if self.close_connection:
            head.append("Connection: close")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        self.server.app.stats.code(code)
        if self.server.app.verbose:
            self.log_message('"%s" %s', self.requestline, code)

    def send_obj(self, code, obj, headers=None):
        self.send_bytes(code, dumps(obj), headers=headers)

    # Request bodies, read as kube-apiserver's Go net/http front reads them. A chunked body
    # (Transfer-Encoding: chunked, any letter case) is decoded: hex sizes, chunk extensions
    # after ";" ignored, trailer lines skipped, a Content-Length beside it ignored (RFC 9112
    # 6.3). A chunk size that is not hex, chunk data not followed by CRLF, or a body cut short
    # (the connection closed before the last chunk) fails the request: 400, and the connection
    # is closed (net/http's chunked reader returns an error to the handler, never a partial
    # body). Another transfer coding is 501 (net/http: "unsupported transfer encoding"). A body
    # over 3 MiB is 413 "Request entity too large: limit is 3145728" (the API server's
    # MaxRequestBodyBytes), chunked or not.
    MAX_BODY = 3 * 1024 * 1024

    def body_error(self, code, msg):
        self.close_connection = True
        return ApiError(code, msg)

    def read_chunked(self):
        data = bytearray()
        while True:
            line = self.rfile.readline(4096)
            if not line.endswith(b"\n"):
                raise self.body_error(400, "unexpected EOF in a chunked request body")
            size = line.split(b";")[0].strip()
            if not size or len(size) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size):
                raise self.body_error(400, "invalid byte in chunk length")
            n = int(size, 16)
            if n == 0:
                while True:  # trailers, up to the empty line
                    t = self.rfile.readline(65537)
                    if t in (b"\r\n", b"\n"):
                        return bytes(data)
                    if not t.endswith(b"\n"):
                        raise self.body_error(400, "unexpected EOF in a chunked request body")
            if len(data) + n > self.MAX_BODY:
                self.discard_chunked(n)
                raise self.body_error(413, "Request entity too large: limit is %d" % self.MAX_BODY)
            part = self.rfile.read(n)
            if len(part) < n:
                raise self.body_error(400, "unexpected EOF in a chunked request body")
            data += part
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise self.body_error(400, "malformed chunked encoding")

    DISCARD_MAX = 256 * 1024

    def discard_chunked(self, n):
        """Reads and drops what is left of a refused chunked body (n: the size of the chunk
        whose header was read), at most DISCARD_MAX bytes, as net/http's server discards up to
        256 KiB of an unread body before it answers and closes: a client that sent the rest
        reads the answer instead of a reset."""
        left = self.DISCARD_MAX
        while 0 < n <= left:
            if len(self.rfile.read(n)) < n or self.rfile.readline(3) not in (b"\r\n", b"\n"):
                return
            left -= n
            line = self.rfile.readline(4096)
            size = line.split(b";")[0].strip()
            if not line.endswith(b"\n") or not size or len(size) > 16 or \
                    any(c not in b"0123456789abcdefABCDEF" for c in size):
                return
            n = int(size, 16)
        if n == 0:
            while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                pass

    def read_body(self):
        te = self.headers.get("Transfer-Encoding")
        if te is not None:
            if te.strip().lower() != "chunked":
                raise self.body_error(501, "unsupported transfer encoding: %r" % te)
            return self.read_chunked()
        cl = self.headers.get("Content-Length") or "0"
        if not cl.isdigit():
            raise self.body_error(400, "bad Content-Length %r" % cl)
        n = int(cl)
        if n > self.MAX_BODY:
            raise self.body_error(413, "Request entity too large: limit is %d" % self.MAX_BODY)
        return self.rfile.read(n) if n else b""

    def json_body(self, raw):
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, f"the body of the request could not be decoded as JSON: {e}")

    # ---- routing

    def dispatch(self, method):
        app = self.server.app
        _WARNINGS.list = []
        log_request(method, self.path, self.headers.get("user-agent", ""))
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"
        q = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            raw = self.read_body()
            if path in PUBLIC:
                if path == "/version":
                    return self.send_obj(200, VERSION)
                return self.send_bytes(200, b"ok", ctype="text/plain")
            if app.token and self.headers.get("Authorization") != "Bearer " + app.token:
                raise ApiError(401, "Unauthorized")
            if path.startswith("/_fake/"):
                return self.control(method, path, q, raw)
            if path.startswith("/openapi/"):
                return self.openapi(path)
            if path == "/api":
                return self.send_obj(200, {"kind": "APIVersions", "versions": ["v1"],
                                           "serverAddressByClientCIDRs": [
                                               {"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": f"127.0.0.1:{app.port}"}]})
            if path == "/apis":
                return self.send_obj(200, api_group_list())
            parts = path.strip("/").split("/")
            if parts[0] == "api" and len(parts) >= 2:
                group, version, rest = "", parts[1], parts[2:]
            elif parts[0] == "apis" and len(parts) >= 2:
                if len(parts) == 2:
                    if parts[1] not in {g for g, _ in group_versions()}:
                        raise ApiError(404, "the server could not find the requested resource")
                    return self.send_obj(200, dict(api_group(parts[1]), kind="APIGroup",
                                                   apiVersion="v1"))
                group, version, rest = parts[1], parts[2], parts[3:]
            else:
                raise ApiError(404, "the server could not find the requested resource")
            if not any(r.group == group and r.version == version and served(r)
                       for r in RESOURCES):  # group_versions() without building the list
                raise ApiError(404, "the server could not find the requested resource")
            if not rest:
                return self.send_obj(200, resource_list(group, version))
            self.resource(method, group, version, rest, q, raw, path)
        except ApiError as e:
            self.send_obj(e.code, e.status(), headers=e.headers)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # a bug: answer like the real server, keep serving
            traceback.print_exc()
            self.send_obj(500, ApiError(500, f"fakeapi internal error: {e!r}").status())

    def resource(self, method, group, version, rest, q, raw, path):
        app = self.server.app
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            ns, rest = rest[1], rest[2:]
        plural, name = rest[0], rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource")
        if (group, plural) == ("", "bindings") and ns and method == "POST" and not name:
            body = self.json_body(raw)
            name = (body.get("metadata") or {}).get("name", "")
            app.stats.request("create", "bindings")
            self.faults("create", path)
            return self.send_obj(201, app.store.bind(ns, name, body))
        res = BY_PATH.get((group, version, plural))
        if res is None or not served(res):
            raise ApiError(404, "the server could not find the requested resource")
        if res.namespaced and name is not None and ns is None:
            raise ApiError(404, "the server could not find the requested resource")
        if not res.namespaced and ns is not None:
            raise ApiError(404, "the server could not find the requested resource")
        if sub and sub != "status" and sub not in res.subs or sub == "status" and not res.status:
            raise ApiError(404, "the server could not find the requested resource")
        watch = q.get("watch") in ("1", "true")
        verb = {"GET": "watch" if watch else ("get" if name else "list"),
                "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}[method]
        app.stats.request(verb, res.qualified + (f"/{sub}" if sub else ""))
        self.faults(verb, path)
        store = app.store
        if sub in ("binding", "eviction"):
            if method != "POST":
                raise ApiError(405, f"the server does not allow this method on {sub}")
            body = self.json_body(raw)
            if sub == "binding":
                fb = app.faults.take("foreign-bind", verb, path)
                if fb:
                    store.foreign_bind(ns, name, fb.get("node") or "elsewhere")
                self.hold(verb, path)
                lost = app.faults.take("lose-answer", verb, path)
                out = store.bind(ns, name, body)
                if lost:
                    return self.lose_answer()
                return self.send_obj(201, out)
            self.hold(verb, path)  # an eviction in flight lands as a Binding does
            lost = app.faults.take("lose-answer", verb, path)
            out = store.evict(ns, name, body)
            if lost:
                return self.lose_answer()
            return self.send_obj(201, out)
        if method == "GET":
            if watch:
                return self.watch(res, ns if res.namespaced else None, name, q, path)
            out = store.get(res, ns, name) if name else store.list(res, ns, q)
            tv = table_version(self.headers.get("Accept")) \
                if res.crd or res.key in BUILT_IN else None
            if tv:  # kubectl get: kube's printers, or the CRD's columns (fakeapi_table.py)
                out = as_table(out, CRD_COLUMNS.get(res.key, {}).get(res.version), tv,
                               q.get("includeObject"), key=res.key)
            return self.send_bytes(200, out)
        if method == "POST":
            if name:
                raise ApiError(405, "POST to a named object is not allowed")
            return self.send_bytes(201, store.create(res, ns, self.json_body(raw), q))
        if method == "PUT":
            body = self.json_body(raw)
            with store.lock:
                # a Lease may be created with a PUT (its strategy's AllowCreateOnUpdate), when
                # the body names no resourceVersion (with one: the 404 of the update)
                if res.key == LEASE_KEY and not sub and isinstance(body, dict) and \
                        (ns, name) not in store.objects[res.key] and \
                        not (body.get("metadata") or {}).get("resourceVersion"):
                    body.setdefault("metadata", {}).setdefault("name", name)
                    return self.send_bytes(201, store.create(res, ns, body, q))
            return self.send_bytes(200, store.update(res, ns, name, body, sub=sub, q=q))
        if method == "PATCH":
            code, out = store.patch(res, ns, name, self.headers.get("Content-Type"), raw,
                                    sub=sub, q=q)
            return self.send_bytes(code, out)
        if method == "DELETE":
            opts = self.json_body(raw)
            if "gracePeriodSeconds" in q:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            if "orphanDependents" in q:
                opts["orphanDependents"] = q["orphanDependents"] == "true"
            if name:
                code, out = store.delete(res, ns, name, opts, q)
                return self.send_bytes(code, out)
            return self.send_obj(200, store.delete_collection(res, ns, q, opts))

    def lose_answer(self):
        """Fault lose-answer: the Binding was committed (the pod is bound, watches see it), then
        the connection is reset before any byte of the answer. It copies a connection cut (a
        proxy restarted, a TCP reset) after kube-apiserver committed the write: the client sees
        a transport error and cannot tell whether the write landed."""
        self.server.app.stats.add("answers_lost")
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))  # close sends RST
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def hold(self, verb, path):
        """Fault hold: the request waits, unanswered, until POST /_fake/release (or its ms pass),
        then is applied as if it had just arrived, whether or not its client is still there:
        a real API server finishes a write whose client went away (the etcd transaction does
        not depend on the connection), so a leader killed with Bindings in flight can see them
        land after its successor started."""
        app = self.server.app
        h = app.faults.take("hold", verb, path)
        if not h:
            return
        app.stats.add("held")
        with app.held:
            app.n_held += 1
            end = time.monotonic() + h["ms"] / 1000.0 if h.get("ms") else None
            gen = app.release_gen
            while app.release_gen == gen and (end is None or time.monotonic() < end):
                app.held.wait(None if end is None else max(0.01, end - time.monotonic()))
            app.n_held -= 1

    def faults(self, verb, path):
        app = self.server.app
        d = app.faults.take("delay", verb, path)
        if d:
            time.sleep(d.get("ms", 100) / 1000.0)
        e = app.faults.take("error", verb, path)
        if e:
            code = int(e["code"])
            headers, details = {}, None
            if code in (429, 503) or e.get("retryAfter"):
                ra = int(e.get("retryAfter", 1))
                if e.get("retryAfterForm") == "date":  # RFC 9110 HTTP-date, now + ra seconds
                    headers["Retry-After"] = email.utils.formatdate(time.time() + ra,
                                                                    usegmt=True)
                else:
                    headers["Retry-After"] = str(ra)
                details = {"retryAfterSeconds": ra}
            raise ApiError(code, e.get("message") or f"injected fault: {code}",
                           details=details, headers=headers)

    # ---- watch

    def watch(self, res, ns, name, q, path):
        app = self.server.app
        check_list_options(q, True)
        w = Watch(app, res, ns, name, q, path)
        if w.stall and str(w.stall.get("beforeHeaders", "")).lower() in ("true", "1"):
            return self.stall_watch()
        added, first = w.initial_events(q)
        app.stats.add("watches_started")
        app.stats.add("watches_active")
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Cache-Control: no-cache, private\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
        app.stats.code(200)
        w.start()
        try:
            for i in range(0, len(added), 1000):  # sent as made, a batch at a time
                if not w.dropped():
                    self.watch_write(w, w.cut([b'{"type":"ADDED","object":' + e.raw + b"}\n"
                                               for e in added[i:i + 1000]]))
            if first and not w.dropped():
                self.watch_write(w, w.cut(first))
            while w.cursor is not None and not w.dropped():
                out = w.cut(w.next_lines())
                if out:
                    self.watch_write(w, out)
            return self.watch_end(w)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            app.stats.add("watches_active", -1)

    def watch_write(self, w, lines):
        """Sends a watch's event lines in one chunk, and counts them. (kube-apiserver flushes
        after each event; where chunks end means nothing to a client, which frames the JSON
        objects itself, and one chunk keeps a streaming list of 500,000 pods cheap here.)"""
        data = b"".join(lines)
        self.wfile.write(b"%x\r\n" % len(data))
        self.wfile.write(data)
        self.wfile.write(b"\r\n")
        w.sent += len(lines)
        self.server.app.stats.add("watch_events", len(lines))

    def watch_end(self, w):
        """A watch over (its deadline passed, the store stopped, or its drop-watch fault fired):
        stalls (stall-watch), breaks off abruptly (drop-watch), or ends its chunked answer."""
        if w.stall and time.monotonic() >= w.deadline - 0.001:
            return self.stall_watch()
        if w.drop is not None and (w.dropped() or time.monotonic() >= w.deadline - 0.001
                                   and w.drop.get("afterSeconds") is not None):
            # an abrupt end: no terminating chunk, the connection is closed
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")

    def stall_watch(self):
        """Fault stall-watch: from now on this watch sends nothing and does not end (no final
        chunk, no FIN) until its client goes away or the server stops. It copies a proxy or load
        balancer between the client and kube-apiserver that lost its upstream but keeps the
        client's connection open: TCP keepalive is answered by the proxy, so only the client's
        own watchdog can tell."""
        app = self.server.app
        app.stats.add("watch_stalls")
        self.close_connection = True
        try:
            self.wfile.flush()
            while not app.store.stopping:
                if select.select([self.connection], [], [], 0.2)[0]:
                    if not self.connection.recv(4096):
                        break  # the client closed its end
        except (OSError, ValueError, ssl.SSLError):
            pass

    @staticmethod
    def event_line(ev, matches):
        new_ok = matches(ev.obj)
        if ev.type == "ADDED" or ev.type == "DELETED":
            return ev.line if new_ok else None
        old_ok = matches(ev.old)
        if new_ok and old_ok:
            return ev.line
        if new_ok:
            return b'{"type":"ADDED","object":' + ev.line[len(b'{"type":"MODIFIED","object":'):]
        if old_ok:
            old = json.loads(dumps(ev.old))
            old["metadata"]["resourceVersion"] = str(ev.rv)
            return dumps({"type": "DELETED", "object": old}) + b"\n"
        return None

    # ---- OpenAPI and control

    def openapi(self, path):
        if path == "/openapi/v3":
            return self.send_obj(200, openapi_v3_index())
        if path.startswith("/openapi/v3/"):
            parts = path[len("/openapi/v3/"):].split("/")
            if parts[0] == "api" and len(parts) == 2:
                gv = ("", parts[1])
            elif parts[0] == "apis" and len(parts) == 3:
                gv = (parts[1], parts[2])
            else:
                gv = None
            if gv not in group_versions():
                raise ApiError(404, "the server could not find the requested resource")
            return self.send_obj(200, openapi_v3_doc(*gv))
        if path == "/openapi/v2":
            if "protobuf" in (self.headers.get("Accept") or ""):
                # as kube-openapi's handler: asked for the protobuf form, it answers
                # application/octet-stream (Go's mime parser, in older kubectl, rejects the '@'
                # of the protobuf media type)
                return self.send_bytes(200, OPENAPI_V2_PB, ctype="application/octet-stream")
            return self.send_obj(200, OPENAPI_V2_JSON)
        raise ApiError(404, "the server could not find the requested resource")

    def control(self, method, path, q, raw):
        app = self.server.app
        body = self.json_body(raw)
        if path == "/_fake/stats" and method == "GET":
            s = app.stats.snapshot()
            with app.store.lock:
                s["resourceVersion"] = app.store.rv
                s["compacted"] = app.store.compacted
                s["objects"] = {BY_KEY[k].qualified: len(t) for k, t in app.store.objects.items()}
            s["faults"] = app.faults.list()
            return self.send_obj(200, s)
        if path == "/_fake/faults":
            if method == "GET":
                return self.send_obj(200, {"faults": app.faults.list()})
            if method == "DELETE":
                app.faults.clear()
                return self.send_obj(200, {"faults": []})
            if method == "POST":
                rules = body.get("faults", body) if isinstance(body, dict) else body
                rules = rules if isinstance(rules, list) else [rules]
                if isinstance(body, dict) and body.get("replace"):
                    app.faults.clear()
                app.faults.add(rules)
                return self.send_obj(200, {"faults": app.faults.list()})
        if path == "/_fake/reset" and method == "POST":
            only = q.get("only", "")
            if only in ("", "store"):
                app.store.reset()
            if only in ("", "faults"):
                app.faults.clear()
            if only in ("", "stats"):
                app.stats.reset()
            return self.send_obj(200, {"reset": only or "all"})
        if path == "/_fake/release" and method == "POST":
            with app.held:
                n = app.n_held
                app.release_gen += 1
                app.held.notify_all()
            return self.send_obj(200, {"released": n})
        if path == "/_fake/held" and method == "GET":
            with app.held:
                return self.send_obj(200, {"held": app.n_held})
        if path == "/_fake/compact" and method == "POST":
            app.store.compact()
            return self.send_obj(200, {"compacted": app.store.compacted})
        raise ApiError(404, f"no control endpoint {method} {path}")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def finish_request(self, request, client_address):
        if self.app.sslctx is None:
            return super().finish_request(request, client_address)
        try:
            request.settimeout(10)
            conn = self.app.sslctx.wrap_socket(request, server_side=True)
            conn.settimeout(None)
        except (ssl.SSLError, OSError):
            return
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            try:
                conn.close()
            except OSError:
                pass

# --------------------------------------------------------------------------------------------
# Certificates, kubeconfig, main.


def make_certs(d):
    ca, crt, key = (os.path.join(d, n) for n in ("ca.crt", "server.crt", "server.key"))
    if all(os.path.exists(p) for p in (ca, crt, key)):
        return ca, crt, key
    ext = os.path.join(d, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    steps = [
        ["openssl", "req", "-x509", *ec, "-keyout", os.path.join(d, "ca.key"), "-out", ca,
         "-days", "30", "-subj", "/CN=fakeapi-ca",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["openssl", "req", *ec, "-keyout", key, "-out", os.path.join(d, "server.csr"),
         "-subj", "/CN=localhost"],
        ["openssl", "x509", "-req", "-in", os.path.join(d, "server.csr"), "-CA", ca,
         "-CAkey", os.path.join(d, "ca.key"), "-CAcreateserial", "-out", crt, "-days", "30",
         "-extfile", ext],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            sys.exit("fakeapi: %s failed:\n%s" % (" ".join(cmd[:3]), r.stdout.decode()))
    return ca, crt, key


def kubeconfig(server, ca_path, token):
    lines = ["apiVersion: v1", "kind: Config", "current-context: fake", "preferences: {}",
             "clusters:", "- name: fake", "  cluster:", f"    server: {server}"]
    if ca_path:
        with open(ca_path, "rb") as f:
            lines.append("    certificate-authority-data: " + base64.b64encode(f.read()).decode())
    lines += ["users:", "- name: fake", "  user:"]
    lines.append(f"    token: {token}" if token else "    {}")
    lines += ["contexts:", "- name: fake", "  context:", "    cluster: fake", "    user: fake",
              "    namespace: default", ""]
    return "\n".join(lines)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class App:
    pass


def read_documents(path):
    """The objects of a JSON file (an object or a List), or of a YAML file (several documents,
    e.g. deploy/crds/*.yaml; needs the yaml module, the only use of a non-stdlib module)."""
    with open(path) as f:
        text = f.read()
    try:
        docs = [json.loads(text)]
    except ValueError:
        import yaml  # noqa: PLC0415 (optional: only YAML files need it)
        docs = [d for d in yaml.safe_load_all(text) if d]
    out = []
    for data in docs:
        if data.get("kind", "").endswith("List"):
            for obj in data.get("items", []):
                if "kind" not in obj:
                    obj["kind"] = data["kind"][:-4]
                    obj.setdefault("apiVersion", data.get("apiVersion", "v1"))
                out.append(obj)
        else:
            out.append(data)
    return out


def load_objects(store, path):
    for obj in read_documents(path):
        res = find_kind(obj.get("apiVersion"), obj.get("kind"))
        if res is None:
            sys.exit(f"fakeapi: {path}: unknown kind {obj.get('apiVersion')}/{obj.get('kind')}")
        meta = obj.setdefault("metadata", {})
        for k in ("uid", "resourceVersion", "creationTimestamp"):
            meta.pop(k, None)
        status = obj.get("status")
        try:
            store.create(res, meta.get("namespace", "default") if res.namespaced else None, obj)
        except ApiError as e:
            if e.code != 409:  # kept from an earlier run (--state-dir): fine
                sys.exit(f"fakeapi: {path}: {e.message}")
            continue
        if status is not None and res.status:
            with store.lock:
                ns = meta.get("namespace") if res.namespaced else None
                cur = json.loads(store.objects[res.key][(ns, meta["name"])].raw)
                cur["status"] = status
                store.update(res, ns, meta["name"], cur, sub="status")


def preload_objects(store, path):
    """--preload: the nodes and pods of a JSON file stored as if they had been in etcd before the
    server started (a kube-apiserver restarted on a full cluster): each gets a uid, a
    creationTimestamp and a resourceVersion of its own, pods the defaults of a create (kept
    status included), but no watch event is recorded and the watch window starts after them
    (a watch from an older version gets 410, as after a compaction). What --load does with one
    create and one status update per object took minutes and a history copy for 500,000 pods
    (the daemon benchmark at 50,000 nodes); objects of other kinds go through --load's path."""
    stamp = now_time()
    with store.lock:
        for obj in read_documents(path):
            res = find_kind(obj.get("apiVersion"), obj.get("kind"))
            if res is None or res.key not in (("", "pods"), ("", "nodes")):
                sys.exit(f"fakeapi: {path}: --preload takes nodes and pods only")
            meta = obj.setdefault("metadata", {})
            ns = meta.get("namespace", "default") if res.namespaced else None
            name = meta.get("name") or ""
            check_name(res, name)
            store._check_namespace(res, ns)
            if (ns, name) in store.objects[res.key]:
                sys.exit(f"fakeapi: {path}: {res.qualified} {name!r} appears twice")
            if res.namespaced:
                meta["namespace"] = ns
            status = obj.get("status")
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
                      "managedFields"):
                meta.pop(k, None)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=stamp, generation=1)
            try:  # they passed admission when they were created (Priority for pods)
                store._admit_create(res, obj)
            except ApiError as e:
                sys.exit(f"fakeapi: {path}: {e.message}")
            prepare_create(res, obj)
            if status is not None:
                obj["status"] = dict(obj.get("status") or {}, **status)
            store.rv += 1
            meta["resourceVersion"] = str(store.rv)
            e = store.objects[res.key][(ns, name)] = Entry(obj)
            for spec in res.fields.values():  # the field set kept beside it (see Entry)
                e.field(spec)
        store.sorted_keys = {}
        store.compacted = store.rv
        store.history, store.history_rvs = [], []
        store.expire_watches()


def feature_gates(ap, text):
    """--feature-gates Name=true|false,...: the gates of served resources (Res.gate), of fields
    (DRAWorkloadResourceClaims: a PodGroup's claims, fakeapi_dra.pg_claim_fields) and WatchList
    (on unless turned off: streaming lists, check_list_options)."""
    for kv in (x for x in text.split(",") if x):
        name, _, val = kv.partition("=")
        known = any(r.gate == name for r in RESOURCES) or name in (PG_CLAIMS_GATE,
                                                                     WATCHLIST_GATE)
        if not known or val not in ("true", "false"):
            ap.error(f"--feature-gates {kv}: not Name=true|false of a gate this server knows")
        if val == "true":
            GATES_ON.add(name)
        else:
            GATES_ON.discard(name)


def main():
    ap = argparse.ArgumentParser(description="fake Kubernetes API server (loopback only)")
    ap.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--kubeconfig-out", help="write a kubeconfig for this server here")
    ap.add_argument("--token", default="", help="bearer token clients must send (TLS mode)")
    ap.add_argument("--plain", action="store_true",
                    help="plain HTTP, no authentication (kubectl sends no token over http)")
    ap.add_argument("--state-dir", help="certificates and the object store survive restarts here")
    ap.add_argument("--kubelet", action="store_true", help="simulate kubelets for bound pods")
    ap.add_argument("--kubelet-delay", type=float, default=0.2,
                    help="seconds from binding to Running (default 0.2)")
    ap.add_argument("--grace-cap", type=float, default=2.0,
                    help="longest simulated termination grace period in seconds (default 2)")
    ap.add_argument("--faults", default="", help="fault rules at startup (docs)")
    ap.add_argument("--history", type=int, default=10000,
                    help="watch history window in events (default 10000)")
    ap.add_argument("--bookmark-interval", type=float, default=10.0,
                    help="seconds between BOOKMARK events (default 10)")
    ap.add_argument("--watch-timeout", type=float, default=1800.0,
                    help="watch length when the client gives no timeoutSeconds")
    ap.add_argument("--load", action="append", default=[],
                    help="JSON object or List (e.g. kubectl get nodes -o json), or YAML documents "
                         "(a CRD of deploy/crds/), to create at start")
    ap.add_argument("--preload", action="append", default=[],
                    help="JSON nodes and pods stored at start as if already in etcd: no create "
                         "per object, no watch events (large benchmark clusters)")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    ap.add_argument("--serve-api", action="append", default=[],
                    help="serve a gated built-in group-version (scheduling.k8s.io/v1beta1, ...), "
                         "as --runtime-config does")
    ap.add_argument("--feature-gates", default="",
                    help="Name=true,... as kube-apiserver's flag: gates that a served resource "
                         "needs besides its group-version (known: CompositePodGroup)")
    ap.add_argument("--disable-admission-plugins", default="",
                    help="comma-separated admission plugins to turn off, as kube-apiserver's flag "
                         "of that name (known: Priority)")
    args = ap.parse_args()
    disabled = {x for x in args.disable_admission_plugins.split(",") if x}
    if disabled - {"Priority"}:
        ap.error("--disable-admission-plugins: unknown plugin(s) %s"
                 % ",".join(sorted(disabled - {"Priority"})))
    if not args.plain and not args.token:
        ap.error("--token is required unless --plain")

    app = App()
    for gv in args.serve_api:
        if not any(r.gated and r.api_version == gv for r in RESOURCES):
            ap.error(f"--serve-api {gv}: not a gated group-version of this server")
        SERVED_GATED.add(gv)
    feature_gates(ap, args.feature_gates)
    app.verbose = args.verbose
    app.token = "" if args.plain else args.token
    app.bookmark_interval = max(0.05, args.bookmark_interval)
    app.watch_timeout = args.watch_timeout
    app.stats = Stats()
    app.faults = Faults(app.stats)
    app.held, app.n_held, app.release_gen = threading.Condition(), 0, 0
    if args.faults:
        try:
            app.faults.add(parse_fault_spec(args.faults))
        except (ValueError, ApiError) as e:
            sys.exit(f"fakeapi: --faults: {e}")
    app.store = Store(args.history, app.stats, app.faults)
    app.store.disabled_admission = disabled
    state_file = None
    tmpdir = None
    if args.state_dir:
        os.makedirs(args.state_dir, exist_ok=True)
        certdir = args.state_dir
        state_file = os.path.join(args.state_dir, "store.json")
        if os.path.exists(state_file):
            app.store.load_saved(state_file)
    else:
        certdir = tmpdir = tempfile.mkdtemp(prefix="fakeapi-")
    for path in args.load:
        load_objects(app.store, path)
    for path in args.preload:
        preload_objects(app.store, path)
    if args.kubelet:
        app.store.kubelet = Kubelet(app.store, args.kubelet_delay, args.grace_cap)
        with app.store.lock:
            for e in list(app.store.objects[("", "pods")].values()):
                app.store.kubelet.notice(e.obj, "MODIFIED")
    app.sslctx, ca = None, None
    if not args.plain:
        ca, crt, key = make_certs(certdir)
        app.sslctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        app.sslctx.load_cert_chain(crt, key)

    server = Server(("127.0.0.1", args.port), Handler)
    server.app = app
    app.port = server.server_address[1]
    scheme = "http" if args.plain else "https"
    if args.kubeconfig_out:
        write_atomic(args.kubeconfig_out,
                     kubeconfig(f"{scheme}://127.0.0.1:{app.port}", ca, app.token))
    if args.port_file:
        write_atomic(args.port_file, f"{app.port}\n")

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stderr.write(f"fakeapi: serving {scheme}://127.0.0.1:{app.port}\n")
    sys.stderr.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        with app.store.lock:
            app.store.stopping = True
            app.store.notify_all()
        server.server_close()
        if state_file:
            app.store.save(state_file)
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
