"""tests/kube/kclient.py: a tiny stdlib client for tests of the fake API server.

Owns: reading the kubeconfig that fakeapi.py writes (server, inline CA, token), one keep-alive
connection per client, JSON requests, and watch streams read event by event. Test helpers only:
no retries, every socket operation has a timeout.
"""

import base64
import http.client
import json
import ssl
import tempfile
from urllib.parse import urlsplit


def read_kubeconfig(path):
    """The three values fakeapi.py writes, from its simple YAML (one key per line)."""
    server = ca = token = None
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition(": ")
            if key == "server":
                server = value
            elif key == "certificate-authority-data":
                ca = base64.b64decode(value)
            elif key == "token":
                token = value
    return server, ca, token


class Client:
    def __init__(self, kubeconfig, token=None, timeout=10):
        self.server, ca, tok = read_kubeconfig(kubeconfig)
        self.token = tok if token is None else token
        u = urlsplit(self.server)
        self.host, self.port, self.tls = u.hostname, u.port, u.scheme == "https"
        self.ctx = None
        if self.tls:
            self.ctx = ssl.create_default_context()
            with tempfile.NamedTemporaryFile(suffix=".crt") as f:
                f.write(ca)
                f.flush()
                self.ctx.load_verify_locations(f.name)
        self.timeout = timeout
        self.conn = None

    def connect(self, timeout=None):
        t = timeout or self.timeout
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=t)
        return http.client.HTTPConnection(self.host, self.port, timeout=t)

    def headers(self, ctype=None, extra=None):
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if ctype:
            h["Content-Type"] = ctype
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, ctype="application/json", headers=None):
        """Returns (status, parsed JSON or raw bytes, response headers)."""
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        for attempt in (1, 2):  # once more if the kept-alive connection was closed
            if self.conn is None:
                self.conn = self.connect()
            try:
                self.conn.request(method, path, body=data,
                                  headers=self.headers(ctype if data is not None else None,
                                                       headers))
                r = self.conn.getresponse()
                raw = r.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        if r.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = None
        try:
            out = json.loads(raw)
        except ValueError:
            out = raw
        return r.status, out, dict(r.getheaders())

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body, ctype="application/json"):
        return self.request("POST", path, body, ctype)

    def put(self, path, body):
        return self.request("PUT", path, body)

    def patch(self, path, body, ctype):
        return self.request("PATCH", path, body, ctype)

    def delete(self, path, body=None):
        return self.request("DELETE", path, body)

    def watch(self, path, timeout=10):
        """A Watch reading the stream of path (which carries watch=1)."""
        return Watch(self, path, timeout)


class Watch:
    def __init__(self, client, path, timeout):
        self.conn = client.connect(timeout)
        self.conn.request("GET", path, headers=client.headers())
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.buf = b""
        self.ended = False  # the terminating chunk arrived
        self.broken = False  # the connection ended without it

    def next(self):
        """The next event as a dict, or None when the stream is over."""
        while b"\n" not in self.buf:
            try:
                chunk = self.resp.read1(65536)
            except http.client.IncompleteRead:
                self.broken = True
                return None
            except (ConnectionError, OSError):
                self.broken = True
                return None
            if not chunk:  # an abrupt end raises IncompleteRead instead
                self.ended = True
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def all(self, limit=10000):
        out = []
        while len(out) < limit:
            ev = self.next()
            if ev is None:
                break
            out.append(ev)
        return out

    def close(self):
        self.conn.close()
