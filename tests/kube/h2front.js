// tests/kube/h2front.js: an HTTP/2 front for the fake API server (tests/kube/fakeapi.py), so
// that the daemon's HTTP/2 path (one TLS connection, every request and watch a stream on it) is
// tested as it runs against a real kube-apiserver.
//
// Owns: a TLS listener on 127.0.0.1 that speaks only h2 (ALPN "h2", no HTTP/1.1 fallback: a
// client that does not negotiate HTTP/2 fails), with the fake server's CA-signed certificate;
// forwarding each stream to fakeapi.py over HTTPS/1.1 (one upstream connection per stream at a
// time, the answer streamed back chunk by chunk, so watches work; a stream the client resets
// cancels its upstream request); counters; injected faults; a plain-HTTP control listener on
// 127.0.0.1 for the tests. Uses only Node's built-in modules (node >= 18; Debian: nodejs).
// Must not touch: the fake server's state (its own /_fake/ endpoints are reached through the
// front like any path).
//
// Run: node tests/kube/h2front.js --upstream PORT --cert-dir DIR --kubeconfig-in FILE
//        --kubeconfig-out FILE --port-file FILE [--max-streams N] [--verbose]
// DIR holds ca.crt, server.crt and server.key (fakeapi.py --state-dir makes them with openssl);
// the kubeconfig written is the fake server's with the server URL pointing at the front. The
// port file gets {"port": P, "control": C} once both listen.
//
// Control (plain HTTP, loopback):
//   GET  /stats  {sessions_opened, sessions_open, streams_opened, streams_open, client_resets,
//                 resets: [{session, path, code}], server_resets, goaways_sent, refused,
//                 pings_received,
//                 peak_streams, sessions: [{id, streams, open, peak, goaway_last, closed}]}
//   POST /fault  one of:
//     {"type": "goaway", "closeAfterMs": N}  graceful GOAWAY (NO_ERROR, last-stream-id = the
//        highest stream the session has seen) on every open session; their streams finish; a
//        session is closed 1 s after its last stream ends, or N ms after the GOAWAY with its
//        streams still open when closeAfterMs is given (Server.Shutdown's deadline: kube-apiserver
//        closes what is left when its shutdown timeout passes).
//     {"type": "goaway-after", "path": S}  the same GOAWAY on the session of the next stream
//        whose path contains S, just after that stream's response headers are sent.
//     {"type": "goaway-refuse", "path": S}  the next stream whose path contains S is not
//        forwarded: its session gets GOAWAY with last-stream-id below it (so the stream was
//        not processed and may be retried, RFC 9113 section 6.8) and the stream is reset with
//        REFUSED_STREAM.
//     {"type": "stall", "path": S, "afterMs": N}  the next stream whose path contains S stops
//        sending anything after N ms (default 0) and never ends, until the client resets it.
//     {"type": "reset", "path": S}  every open stream whose path contains S is reset now by the
//        server (RST_STREAM INTERNAL_ERROR = 2, no END_STREAM before it: what Go's HTTP/2
//        server sends when a handler panics, http.ErrAbortHandler included: golang.org/x/net/http2
//        write.go handlerPanicRST); counted in server_resets.
//     {"type": "blackhole"}  every connection open now stops passing bytes both ways (nothing
//        answered, not even PING or SETTINGS frames; TCP itself stays up and acknowledges, as
//        behind a proxy whose upstream vanished); connections made later are served.
//   POST /reset  clears the faults (not the counters).
//
// What each part copies (sources read in the upstream trees):
// * Max concurrent streams: kube-apiserver (k8s.io/apiserver/pkg/server/secure_serving.go,
//   SecureServingInfo.Serve) advertises --http2-max-streams-per-connection; 0, the default,
//   means 100 in current releases (the value Go's HTTP/2 client assumes before SETTINGS, set
//   explicitly so the per-connection buffer can be sized; older releases, whose flag help says
//   "Zero means to use golang's default", left Go's server default of 250: golang.org/x/net/http2
//   server.go defaultMaxStreams). The front advertises 100 unless --max-streams says otherwise;
//   nghttp2 (in Node) refuses streams past it with RST_STREAM REFUSED_STREAM.
// * goaway-after copies --goaway-chance (k8s.io/apiserver/pkg/server/filters/goaway.go,
//   WithProbabilisticGoaway, installed by DefaultBuildHandlerChain for any HTTP/2 request,
//   watches included): the filter sets "Connection: close" on the response, which Go's HTTP/2
//   server (golang.org/x/net/http2 server.go, writeChunk -> startGracefulShutdown) turns into
//   one GOAWAY with ErrCodeNo and last-stream-id = the highest client stream it has seen; the
//   streams already open run to their end (watches until their timeoutSeconds); the connection
//   is closed goAwayTimeout (1 s) after the last one ends (serverConn.serve: the shutdown timer
//   starts only once curOpenStreams() is 0 for a graceful GOAWAY). "goaway" is the same GOAWAY
//   without waiting for a request (a graceful server shutdown, Server.Shutdown).
// * goaway-refuse copies the race RFC 9113 section 6.8 allows: streams above last-stream-id
//   were not processed and the client may retry them on a new connection.
// * stall copies fakeapi's stall-watch at the stream level (a proxy that lost its upstream for
//   one stream); blackhole copies a whole connection that went silent (client-go answers that
//   with an HTTP/2 PING after ReadIdleTimeout 30 s and closes the connection when no ack comes
//   within PingTimeout 15 s: k8s.io/apimachinery/pkg/util/net/http.go, readIdleTimeoutSeconds
//   and pingTimeoutSeconds, HTTP2_READ_IDLE_TIMEOUT_SECONDS and HTTP2_PING_TIMEOUT_SECONDS).
'use strict';

const fs = require('fs');
const http = require('http');
const http2 = require('http2');
const https = require('https');
const net = require('net');
const path = require('path');

const C = http2.constants;

function parseArgs(argv) {
    const a = {maxStreams: 100};
    for (let i = 2; i < argv.length; i++) {
        const k = argv[i];
        const v = argv[i + 1];
        if (k === '--upstream') a.upstream = Number(v);
        else if (k === '--cert-dir') a.certDir = v;
        else if (k === '--kubeconfig-in') a.kcIn = v;
        else if (k === '--kubeconfig-out') a.kcOut = v;
        else if (k === '--port-file') a.portFile = v;
        else if (k === '--max-streams') a.maxStreams = Number(v);
        else if (k === '--verbose') {
            a.verbose = true;
            i--;
        } else {
            process.stderr.write(`h2front: unknown argument ${k}\n`);
            process.exit(2);
        }
        i++;
    }
    if (!a.upstream || !a.certDir || !a.portFile || !(a.maxStreams > 0)) {
        process.stderr.write('h2front: --upstream, --cert-dir and --port-file are required, ' +
                             '--max-streams must be > 0\n');
        process.exit(2);
    }
    return a;
}

const args = parseArgs(process.argv);
const ca = fs.readFileSync(path.join(args.certDir, 'ca.crt'));
const agent = new https.Agent({keepAlive: true, maxSockets: Infinity, ca});

const stats = {
    sessions_opened: 0, sessions_open: 0, streams_opened: 0, streams_open: 0, client_resets: 0,
    resets: [], goaways_sent: 0, refused: 0, pings_received: 0, peak_streams: 0, sessions: [],
    upstream_errors: 0, server_resets: 0,
};
let faults = [];
const sessions = new Set();
const openStreams = new Set(); // {stream, rec}
const pipes = new Set(); // TCP pairs (client socket, inner socket)

function log(msg) {
    process.stderr.write(`h2front: ${new Date().toISOString()} ${msg}\n`);
}

// A fault's path: a substring of the request path (query included), or a list of substrings
// that must all appear.
function matches(f, p) {
    if (!f.path) return true;
    const subs = Array.isArray(f.path) ? f.path : [f.path];
    return subs.every((s) => p.includes(s));
}

function takeFault(type, p) {
    const i = faults.findIndex((f) => f.type === type && matches(f, p));
    if (i < 0) return null;
    return faults.splice(i, 1)[0];
}

// Graceful GOAWAY as Go's server sends it: NO_ERROR, last = the highest stream seen.
function goaway(sess, last) {
    if (sess.destroyed || sess.rec.goaway_last !== null) return;
    sess.rec.goaway_last = last === undefined ? sess.maxId : last;
    sess.goaway(C.NGHTTP2_NO_ERROR, sess.rec.goaway_last);
    stats.goaways_sent++;
    log(`session ${sess.rec.id}: GOAWAY last-stream-id ${sess.rec.goaway_last}`);
    maybeClose(sess);
}

// RST_STREAM INTERNAL_ERROR now. Node's stream.close(code) ends the stream first once the
// response has begun (END_STREAM, then a RST_STREAM the client ignores: a clean end to it);
// destroy() sends the RST_STREAM alone.
function abort(stream) {
    if (!stream.destroyed) stream.destroy(new Error('h2front: stream reset'));
}

function maybeClose(sess) {
    if (sess.rec.goaway_last === null || sess.rec.open > 0 || sess.closeTimer) return;
    sess.closeTimer = setTimeout(() => {
        if (!sess.destroyed) sess.destroy();
    }, 1000);
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade',
                     'proxy-connection', 'te', 'host']);

function forward(stream, headers, rec) {
    const hdrs = {};
    for (const [k, v] of Object.entries(headers)) {
        if (!k.startsWith(':') && !HOP.has(k)) hdrs[k] = v;
    }
    hdrs.host = `127.0.0.1:${args.upstream}`;
    const up = https.request({host: '127.0.0.1', port: args.upstream, method: headers[':method'],
                              path: headers[':path'], headers: hdrs, agent});
    rec.up = up;
    const stall = takeFault('stall', rec.path);
    if (stall) {
        setTimeout(() => {
            rec.stalled = true;
            log(`stream ${rec.sid} ${rec.path}: stalled`);
        }, stall.afterMs || 0);
    }
    up.on('response', (res) => {
        if (stream.destroyed || stream.closed) {
            res.destroy();
            return;
        }
        const out = {':status': res.statusCode};
        for (const [k, v] of Object.entries(res.headers)) {
            if (!HOP.has(k)) out[k] = v;
        }
        if (rec.stalled) return; // stalled before the headers: nothing ever comes
        stream.respond(out);
        const ga = takeFault('goaway-after', rec.path);
        if (ga) goaway(stream.session);
        res.on('data', (chunk) => {
            if (rec.stalled || stream.destroyed || stream.closed) return;
            if (!stream.write(chunk)) {
                res.pause();
                stream.once('drain', () => res.resume());
            }
        });
        res.on('end', () => {
            if (!rec.stalled && !stream.destroyed && !stream.closed) stream.end();
        });
        res.on('error', () => abort(stream));
    });
    up.on('error', (e) => {
        stats.upstream_errors++;
        if (stream.destroyed || stream.closed) return;
        if (!stream.headersSent) {
            stream.respond({':status': 502, 'content-type': 'text/plain'});
            stream.end(`h2front: upstream: ${e.message}\n`);
        } else {
            abort(stream);
        }
    });
    stream.pipe(up);
}

function onStream(stream, headers) {
    const sess = stream.session;
    const p = headers[':path'] || '';
    sess.maxId = Math.max(sess.maxId, stream.id);
    stats.streams_opened++;
    stats.streams_open++;
    sess.rec.streams++;
    sess.rec.open++;
    sess.rec.peak = Math.max(sess.rec.peak, sess.rec.open);
    stats.peak_streams = Math.max(stats.peak_streams, sess.rec.open);
    const rec = {sid: stream.id, path: p, ours: false, stalled: false, up: null};
    if (args.verbose) log(`session ${sess.rec.id} stream ${stream.id}: ${headers[':method']} ${p}`);
    const entry = {stream, rec};
    openStreams.add(entry);
    stream.on('close', () => {
        openStreams.delete(entry);
        if (args.verbose) log(`session ${sess.rec.id} stream ${stream.id}: closed, code ${stream.rstCode}`);
        stats.streams_open--;
        sess.rec.open--;
        if (stream.rstCode && !rec.ours) {
            stats.client_resets++;
            stats.resets.push({session: sess.rec.id, path: p, code: stream.rstCode});
            if (stats.resets.length > 200) stats.resets.shift();
        }
        if (rec.up) rec.up.destroy();
        maybeClose(sess);
    });
    stream.on('error', () => {});
    if (sess.rec.goaway_last !== null && stream.id > sess.rec.goaway_last) {
        rec.ours = true;
        stats.refused++;
        stream.close(C.NGHTTP2_REFUSED_STREAM);
        return;
    }
    if (takeFault('goaway-refuse', p)) {
        rec.ours = true;
        stats.refused++;
        goaway(sess, stream.id - 2);
        log(`session ${sess.rec.id} stream ${stream.id}: refused, not forwarded`);
        stream.close(C.NGHTTP2_REFUSED_STREAM);
        return;
    }
    forward(stream, headers, rec);
}

const h2 = http2.createSecureServer({
    cert: fs.readFileSync(path.join(args.certDir, 'server.crt')),
    key: fs.readFileSync(path.join(args.certDir, 'server.key')),
    allowHTTP1: false,
    settings: {maxConcurrentStreams: args.maxStreams},
});
h2.on('session', (sess) => {
    stats.sessions_opened++;
    stats.sessions_open++;
    sess.maxId = 0;
    sess.rec = {id: stats.sessions_opened, streams: 0, open: 0, peak: 0, goaway_last: null,
                closed: false};
    stats.sessions.push(sess.rec);
    sessions.add(sess);
    log(`session ${sess.rec.id} opened`);
    sess.on('ping', () => stats.pings_received++);
    sess.on('close', () => {
        stats.sessions_open--;
        sess.rec.closed = true;
        sessions.delete(sess);
        log(`session ${sess.rec.id} closed`);
    });
    sess.on('error', () => {});
});
h2.on('stream', onStream);
h2.on('unknownProtocol', (sock) => {
    log('a client that does not speak h2 (no ALPN h2): connection closed');
    sock.destroy();
});

// The public listener is a TCP relay to the TLS server, so that a blackhole can stop the bytes
// of a connection without closing it.
const inner = h2.listen(0, '127.0.0.1', () => {
    const outer = net.createServer((client) => {
        const up = net.connect(inner.address().port, '127.0.0.1');
        const pair = {client, up, hole: false};
        pipes.add(pair);
        client.on('data', (d) => {
            if (!pair.hole) up.write(d);
        });
        up.on('data', (d) => {
            if (!pair.hole) client.write(d);
        });
        const end = () => {
            pipes.delete(pair);
            client.destroy();
            up.destroy();
        };
        client.on('close', end);
        up.on('close', end);
        client.on('error', () => {});
        up.on('error', () => {});
    });
    outer.listen(0, '127.0.0.1', () => {
        const port = outer.address().port;
        if (args.kcIn && args.kcOut) {
            const kc = fs.readFileSync(args.kcIn, 'utf8')
                .replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${port}`);
            fs.writeFileSync(args.kcOut + '.tmp', kc);
            fs.renameSync(args.kcOut + '.tmp', args.kcOut);
        }
        control.listen(0, '127.0.0.1', () => {
            const body = JSON.stringify({port, control: control.address().port});
            fs.writeFileSync(args.portFile + '.tmp', body + '\n');
            fs.renameSync(args.portFile + '.tmp', args.portFile);
            log(`serving h2 on 127.0.0.1:${port} for upstream 127.0.0.1:${args.upstream}, ` +
                `max concurrent streams ${args.maxStreams}`);
        });
    });
});

function reply(res, code, obj) {
    const b = JSON.stringify(obj);
    res.writeHead(code, {'content-type': 'application/json', 'content-length': Buffer.byteLength(b)});
    res.end(b);
}

const FAULTS = new Set(['goaway', 'goaway-after', 'goaway-refuse', 'stall', 'reset', 'blackhole']);

const control = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
        if (req.method === 'GET' && req.url === '/stats') return reply(res, 200, stats);
        if (req.method === 'POST' && req.url === '/reset') {
            faults = [];
            return reply(res, 200, {reset: true});
        }
        if (req.method === 'POST' && req.url === '/fault') {
            let f;
            try {
                f = JSON.parse(body);
            } catch (e) {
                return reply(res, 400, {error: `body: ${e.message}`});
            }
            if (!f || !FAULTS.has(f.type)) return reply(res, 400, {error: `unknown fault type`});
            if (f.type === 'goaway') {
                for (const s of sessions) {
                    goaway(s);
                    if (f.closeAfterMs >= 0) {
                        setTimeout(() => {
                            if (!s.destroyed) {
                                log(`session ${s.rec.id}: closed ${f.closeAfterMs} ms after its GOAWAY`);
                                s.destroy();
                            }
                        }, f.closeAfterMs);
                    }
                }
            } else if (f.type === 'reset') {
                let n = 0;
                for (const {stream, rec} of openStreams) {
                    if (!matches(f, rec.path) || stream.closed || stream.destroyed) continue;
                    rec.ours = true;
                    abort(stream);
                    log(`stream ${rec.sid} ${rec.path}: reset by the server`);
                    n++;
                }
                stats.server_resets += n;
            } else if (f.type === 'blackhole') {
                for (const p of pipes) p.hole = true;
                log(`blackhole: ${pipes.size} connection(s) silenced`);
            } else {
                faults.push(f);
            }
            return reply(res, 200, {ok: true, sessions: sessions.size});
        }
        return reply(res, 404, {error: `no control endpoint ${req.method} ${req.url}`});
    });
});

function stop() {
    for (const s of sessions) s.destroy();
    for (const p of pipes) {
        p.client.destroy();
        p.up.destroy();
    }
    process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
