#!/usr/bin/env python3
"""serve_client.py -- checks of `qwenchat serve` from the outside, over plain sockets
and http.client (tests/cli/serve.sh runs them; every server is on 127.0.0.1).

  hostile PORT KEYED_PORT KEY TIMEOUT   a table of bad requests: each a clean 4xx with
                                        the OpenAI error object, the server still
                                        serving; a slowloris client timed out while
                                        others are answered
  load PORT PID CLIENTS KEY             CLIENTS concurrent clients against the rigged
                                        model: each answered (its own answer) or 503;
                                        RSS before and after
  followup PORT                         a ~2K-token conversation, then its follow-up:
                                        only the new tokens are prefilled; presence and
                                        frequency penalties look at the answer alone
  cancel PORT                           (a server with --queue 0) a second request is
                                        refused with 503 while one runs; a client that
                                        hangs up mid-stream stops its generation
  bounds PORT PID CLIENTS               CLIENTS hostile 4 MiB bodies at once: refused, and
                                        the server's peak memory bounded
  conns PORT                            GETs on a kept-alive connection; half-closing
                                        clients get their answers; a closed one cancels
  stopping PORT PID                     (a server with --queue 2) a queued client that
                                        hangs up frees its place at once; SIGTERM: the
                                        waiting request gets 503, the running stream is
                                        cut (no last chunk, no [DONE])
Prints one "ok: ..." or "FAIL: ..." line per check; exits 1 when any failed.
"""
import http.client
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

failures = 0


def check(cond, what):
    global failures
    if cond:
        print("ok: " + what)
    else:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


def request(port, method, path, body=None, headers=None, timeout=120):
    """(status, headers, parsed JSON body or the raw text)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, dict(r.getheaders()), json.loads(data)
    except ValueError:
        return r.status, dict(r.getheaders()), data


def raw(port, data, timeout=10):
    """Sends bytes as they are; returns the status line's code and the body."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    got = read_all(s, whole_reply, socket.timeout)
    head, _, body = got.partition(b"\r\n\r\n")
    code = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    return code, body


def trickled_cut(port, start, trickle):
    """Sends start, then trickle a byte at a time, each waiting up to a second for the
    server: the seconds until the server closed the connection, or None."""
    slow = socket.create_connection(("127.0.0.1", port), timeout=1)
    slow.sendall(start)
    t0 = time.time()
    cut = None
    for b in trickle:
        try:
            slow.send(bytes([b]))
            if slow.recv(100) == b"":
                cut = time.time() - t0
                break
        except socket.timeout:
            continue
        except OSError:
            cut = time.time() - t0
            break
    slow.close()
    return cut


def is_error_object(body):
    e = body.get("error") if isinstance(body, dict) else None
    return (isinstance(e, dict) and isinstance(e.get("message"), str) and e["message"]
            and isinstance(e.get("type"), str) and "param" in e and "code" in e)


USER = [{"role": "user", "content": "hi"}]


def hostile(port, kport, key, timeout):
    deep = '{"messages": [{"role": "user", "content": "x"}], "x": ' + "[" * 100 + "]" * 100 + "}"
    cases = [
        # (description, port, method, path, body, headers, status, param)
        ("deep JSON", port, "POST", "/v1/chat/completions", deep, None, 400, None),
        ("invalid UTF-8", port, "POST", "/v1/chat/completions",
         b'{"messages": [{"role": "user", "content": "\xc3\x28"}]}', None, 400, None),
        ("bad JSON", port, "POST", "/v1/chat/completions", '{"messages": [', None, 400, None),
        ("body not an object", port, "POST", "/v1/chat/completions", "[]", None, 400, None),
        ("empty body", port, "POST", "/v1/chat/completions", "", None, 400, None),
        ("unknown role", port, "POST", "/v1/chat/completions",
         {"messages": [{"role": "wizard", "content": "x"}]}, None, 400, "messages[0].role"),
        ("content of the wrong type", port, "POST", "/v1/chat/completions",
         {"messages": [{"role": "user", "content": 42}]}, None, 400, "messages[0].content"),
        ("an image part", port, "POST", "/v1/chat/completions",
         {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
         None, 400, "messages[0].content[0]"),
        ("no messages", port, "POST", "/v1/chat/completions", {"messages": []}, None, 400, "messages"),
        ("max_tokens huge", port, "POST", "/v1/chat/completions",
         {"messages": USER, "max_tokens": 10 ** 12}, None, 400, "max_tokens"),
        ("max_tokens negative", port, "POST", "/v1/chat/completions",
         {"messages": USER, "max_tokens": -5}, None, 400, "max_tokens"),
        ("max_tokens beyond the context", port, "POST", "/v1/chat/completions",
         {"messages": USER, "max_tokens": 100000}, None, 400, "max_tokens"),
        ("max_completion_tokens beyond the context", port, "POST", "/v1/chat/completions",
         {"messages": USER, "max_completion_tokens": 100000}, None, 400, "max_completion_tokens"),
        ("temperature a string", port, "POST", "/v1/chat/completions",
         {"messages": USER, "temperature": "warm"}, None, 400, "temperature"),
        ("n = 129", port, "POST", "/v1/chat/completions", {"messages": USER, "n": 129}, None, 400, "n"),
        ("top_logprobs 50", port, "POST", "/v1/chat/completions",
         {"messages": USER, "logprobs": True, "top_logprobs": 50}, None, 400, "top_logprobs"),
        # 128 x 100 tokens with 20 alternatives each: more log-probabilities than an
        # answer that is not streamed may hold, refused before any token is made
        ("an unstreamed answer too large to hold", port, "POST", "/v1/chat/completions",
         {"messages": USER, "n": 128, "max_tokens": 100, "logprobs": True, "top_logprobs": 20},
         None, 400, "logprobs"),
        ("a text completion too large to hold", port, "POST", "/v1/completions",
         {"prompt": "hi", "n": 128, "max_tokens": 100, "logprobs": 20}, None, 400, "logprobs"),
        ("a form that is not JSON", port, "POST", "/v1/chat/completions", "messages=hi",
         {"Content-Type": "application/x-www-form-urlencoded"}, 415, None),
        ("an unknown member of 100 kB", port, "POST", "/v1/chat/completions",
         {"messages": USER, "blob": "x" * 100000}, None, 400, "blob"),
        ("200k values", port, "POST", "/v1/chat/completions",
         '{"messages": [{"role": "user", "content": "x"}], "x": [' + ",".join(["1"] * 200000) + "]}",
         None, 400, None),
        ("unknown path", port, "GET", "/v1/completions/../../etc/passwd", None, None, 404, None),
        ("wrong method", port, "DELETE", "/v1/chat/completions", None, None, 405, None),
        ("GET on the completions", port, "GET", "/v1/chat/completions", None, None, 405, None),
        ("missing API key", kport, "GET", "/v1/models", None, None, 401, None),
        ("wrong API key", kport, "POST", "/v1/chat/completions", {"messages": USER},
         {"Authorization": "Bearer " + key + "x"}, 401, None),
        ("a key that is a prefix of the right one", kport, "GET", "/health", None,
         {"Authorization": "Bearer " + key[:-1]}, 401, None),
        ("the key without Bearer", kport, "GET", "/health", None, {"Authorization": key}, 401, None),
    ]
    for what, p, method, path, body, headers, status, param in cases:
        try:
            got, h, data = request(p, method, path, body, headers)
        except (OSError, http.client.HTTPException) as e:
            check(False, "%s: %s" % (what, e))
            continue
        ok = got == status and is_error_object(data)
        if ok and param:
            ok = data["error"]["param"] == param and data["error"]["message"].startswith(param)
        check(ok, "%s: %d with an error object%s (got %d %s)" % (
            what, status, " naming " + param if param else "", got, str(data)[:200]))
        if status == 405:
            check(h.get("Allow") in ("GET", "POST"), "%s: an Allow header" % what)
    # a JSON body is taken whatever its type, as llama-server takes it: `curl -d` sends
    # application/x-www-form-urlencoded, clients without a type send none
    for what, h in (("sent as a form (curl -d)", {"Content-Type": "application/x-www-form-urlencoded"}),
                    ("with a JSON-like type", {"Content-Type": "application/json-patch+json"}),
                    ("with a text type", {"Content-Type": "text/plain"})):
        got, _, data = request(port, "POST", "/v1/chat/completions",
                               {"messages": USER, "max_tokens": 2}, h)
        check(got == 200 and "choices" in data, "a JSON body %s: answered (%d)" % (what, got))
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.putrequest("POST", "/v1/chat/completions", skip_accept_encoding=True)
    body = json.dumps({"messages": USER, "max_tokens": 2}).encode()
    c.putheader("Content-Length", str(len(body)))
    c.endheaders(body)
    r = c.getresponse()
    check(r.status == 200 and "choices" in json.loads(r.read()), "a JSON body without a type: answered")
    c.close()
    # a body declared larger than 4 MiB: refused before it is sent when the client waits
    # for a go-ahead (Expect: 100-continue); one sent at once (the openai client's way)
    # is read and dropped, and the 413 then reaches the client instead of a reset
    code, data = raw(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                     b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % (5 << 20))
    check(code == 413 and is_error_object(json.loads(data or b"{}")),
          "oversized body (5 MiB, Expect: 100-continue): 413 with an error object before the body")
    big = b'{"messages": [{"role": "user", "content": "' + b"a" * (5 << 20) + b'"}]}'
    code, data = raw(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(big), big), timeout=30)
    check(code == 413 and is_error_object(json.loads(data or b"{}")),
          "oversized body (5 MiB) sent whole: the 413 is read, not a reset (%d)" % code)
    # a body framed two ways (which a proxy in front may read otherwise) is refused,
    # and so is an HTTP/1.1 request without Host; HEAD is GET without the body
    for what, head in (("two Content-Lengths", b"Content-Length: 2\r\nContent-Length: 40\r\n"),
                       ("chunked beside a Content-Length",
                        b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n"),
                       ("a coding other than chunked", b"Transfer-Encoding: gzip, chunked\r\n")):
        code, data = raw(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n%s\r\n{}" % head,
                         timeout=5)
        check(code == 400 and b"bad_framing" in data, "a body framed with %s: 400 (%d)" % (what, code))
    code, data = raw(port, b"GET /health HTTP/1.1\r\n\r\n", timeout=5)
    check(code == 400 and is_error_object(json.loads(data or b"{}")),
          "HTTP/1.1 without Host: 400 with an error object (%d, %r)" % (code, data[:80]))
    # a server on 127.0.0.1 answers requests to this machine only: a page whose name was
    # pointed at 127.0.0.1 (DNS rebinding) is refused, whatever it asks
    for host in (b"evil.example:%d" % port, b"127.0.0.1.evil.example", b"[::2]:80"):
        code, data = raw(port, b"GET /health HTTP/1.1\r\nHost: %s\r\n\r\n" % host, timeout=5)
        check(code == 403 and b"host_not_allowed" in data, "Host %s: 403 (%d)" % (host.decode(), code))
    code, data = raw(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: evil.example\r\n"
                     b"Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}", timeout=5)
    check(code == 403, "a cross-site POST with a foreign Host: 403 before the body (%d)" % code)
    for host in (b"localhost:%d" % port, b"LOCALHOST.", b"127.0.0.1:%d" % port, b"127.1.2.3",
                 b"[::1]:%d" % port, b"app.localhost", socket.gethostname().encode()):
        code, _ = raw(port, b"GET /health HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host,
                      timeout=5)
        check(code == 200, "Host %s: answered (%d)" % (host.decode(), code))
    # an absolute-form target (as sent through a proxy) is its path; its host is
    # checked as Host is
    code, data = raw(port, b"GET http://localhost:%d/v1/models HTTP/1.1\r\nHost: localhost\r\n"
                     b"Connection: close\r\n\r\n" % port, timeout=5)
    check(code == 200 and b'"object"' in data, "GET http://localhost/v1/models: 200 (%d)" % code)
    code, data = raw(port, b"GET HTTP://127.0.0.1 HTTP/1.1\r\nHost: localhost\r\n"
                     b"Connection: close\r\n\r\n", timeout=5)
    check(code == 404 and b"unknown_url" in data, "GET HTTP://127.0.0.1 (the path /): 404 (%d)" % code)
    code, data = raw(port, b"GET http://evil.example/health HTTP/1.1\r\nHost: localhost\r\n"
                     b"Connection: close\r\n\r\n", timeout=5)
    check(code == 403 and b"evil.example" in data, "GET http://evil.example/health: 403 (%d)" % code)
    # a name is a name and a port, nothing after: user info names the host after it;
    # a name is of host-name characters ("?.localhost" is not under localhost)
    for target, host in ((b"http://localhost:1@evil.example/health", b"localhost"),
                         (b"/health", b"localhost:1@evil.example"),
                         (b"/health", b"[::1]:1@evil.example"),
                         (b"http://evil.example?.localhost/health", b"localhost"),
                         (b"/health", b"evil.example#.localhost")):
        code, data = raw(port, b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                         % (target, host), timeout=5)
        check(code == 403 and b"evil.example" in data,
              "GET %s, Host %s: 403 (%d)" % (target.decode(), host.decode(), code))
    code, data = raw(port, b"HEAD /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", timeout=5)
    check(code == 200 and data == b"", "HEAD /health: 200 without a body (%d, %r)" % (code, data[:20]))
    # a second Host or Origin: the guards read the first, a proxy may read another
    for dup in (b"Host: localhost\r\nHost: evil.example\r\n",
                b"Host: localhost\r\nOrigin: http://localhost\r\nOrigin: http://evil.example\r\n"):
        code, data = raw(port, b"GET /v1/models HTTP/1.1\r\n%sConnection: close\r\n\r\n" % dup,
                         timeout=5)
        check(code == 400 and is_error_object(json.loads(data or b"{}")),
              "two %s headers: 400 (%d)" % (dup.split(b"\r\n")[-2].split(b":")[0].decode(), code))
    # a chunked upload growing past the limit is cut off the same way
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    piece = b"a" * 65536
    try:
        for _ in range(80):
            s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
        s.sendall(b"0\r\n\r\n")
        data = s.recv(4096)
    except OSError:
        data = b""
    s.close()
    check(b" 413 " in data.split(b"\r\n")[0], "chunked body past 4 MiB: 413 (%r)" % data[:40])
    # ... and one that goes on and on is not read past the 64 MiB drained: the server
    # closes it there (the client, still sending, sees the connection end)
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    piece, sent = b"a" * (1 << 20), 0
    try:
        while sent < 512:
            s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += 1
    except OSError:
        pass
    s.close()
    check(sent < 100, "an endless chunked body: cut after the drain, %d MiB sent" % sent)
    # the right key opens every endpoint
    got, _, _ = request(kport, "GET", "/v1/models", headers={"Authorization": "Bearer " + key})
    check(got == 200, "the right API key: 200")
    # ... with white space after it (no part of a header's value): 200 too
    code, _ = raw(kport, b"GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s \t\r\n"
                  b"Connection: close\r\n\r\n" % key.encode(), timeout=5)
    check(code == 200, "the right API key and a trailing blank: 200 (%d)" % code)
    # two keys, the right one first or last: refused either way (a proxy may read the other)
    for two in ((key, key + "x"), (key + "x", key)):
        code, data = raw(kport, b"GET /v1/models HTTP/1.1\r\nHost: localhost\r\n"
                         b"Authorization: Bearer %s\r\nAuthorization: Bearer %s\r\n"
                         b"Connection: close\r\n\r\n" % (two[0].encode(), two[1].encode()),
                         timeout=5)
        check(code == 400, "two Authorization headers: 400 (%d)" % code)

    # slowloris: half a request line, then silence; others are answered meanwhile and the
    # silent connection is closed once the timeout passes
    slow = socket.create_connection(("127.0.0.1", port), timeout=timeout + 20)
    slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Le")
    t0 = time.time()
    got, _, data = request(port, "POST", "/v1/chat/completions",
                           {"messages": USER, "max_tokens": 2})
    check(got == 200 and time.time() - t0 < timeout,
          "a request is answered while a slow client holds its connection")
    try:
        closed = slow.recv(4096)
    except OSError:
        closed = b""
    waited = time.time() - t0
    slow.close()
    check(waited < timeout + 10, "the slow client is cut off after %.1f s (timeout %d s; got %r)" % (
        waited, timeout, closed[:30]))
    # headers trickled a byte at a time, never silent for the timeout: cut at the
    # deadline all the same (256 of them would otherwise shut everyone out), and so is
    # a body trickled in after whole headers
    cut = trickled_cut(port, b"", b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * (8 * timeout + 40))
    check(cut is not None and cut < timeout + 2,
          "headers trickled in: cut after %s s (timeout %d s)" % (cut and "%.1f" % cut, timeout))
    cut = trickled_cut(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4000\r\n\r\n{",
                       b" " * (timeout + 10))
    check(cut is not None and cut < timeout + 2,
          "a body trickled in: cut after %s s (timeout %d s)" % (cut and "%.1f" % cut, timeout))
    got, _, data = request(port, "GET", "/health")
    check(got == 200 and data == {"status": "ok"}, "still serving after the hostile requests")


def load(port, pid, clients, key):
    """The rigged model writes the same script whatever the prompt; each client's
    answer is told apart by its prompt length (prompt_tokens) and its max_tokens."""
    def body(i):
        words = " ".join(["x"] * (70 + i))
        return {"messages": [{"role": "user", "content": words}], "max_tokens": 1 + i % 16,
                "temperature": 0, "repetition_penalty": 10}

    def rss():
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    auth = {"Authorization": "Bearer " + key}
    expect = {}
    for i in range(clients):  # one at a time: what each must get
        got, _, data = request(port, "POST", "/v1/chat/completions", body(i), auth)
        if got != 200:
            check(False, "sequential request %d: %d %s" % (i, got, data))
            return
        m = data["choices"][0]["message"]
        expect[i] = (data["usage"]["prompt_tokens"], data["usage"]["completion_tokens"],
                     m.get("content"), m.get("reasoning_content"))
    check(len({e[0] for e in expect.values()}) == clients, "every client's prompt has its own length")

    def one_round():
        results = [None] * clients
        start = threading.Barrier(clients)

        def run(i):
            start.wait()
            try:
                got, _, data = request(port, "POST", "/v1/chat/completions", body(i), auth,
                                       timeout=300)
                results[i] = (got, data)
            except (OSError, http.client.HTTPException) as e:
                results[i] = (0, str(e))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    rss0 = rss()
    rounds = []
    for r in range(3):
        results = one_round()
        ok = refused = 0
        for i, (got, data) in enumerate(results):
            if got == 200:
                m = data["choices"][0]["message"]
                mine = (data["usage"]["prompt_tokens"], data["usage"]["completion_tokens"],
                        m.get("content"), m.get("reasoning_content"))
                if mine == expect[i]:
                    ok += 1
            elif got == 503 and is_error_object(data):
                refused += 1
        rounds.append(rss())
        check(ok + refused == clients,
              "round %d: %d clients at once: %d answered with their own answer, %d refused "
              "with 503, none lost or mixed up" % (r + 1, clients, ok, refused))
    print("rss: %d KiB before, %s KiB after each round" % (rss0, ", ".join(map(str, rounds))))
    # the first round grows the allocator's per-thread arenas; after it RSS stays put
    if os.environ.get("QWENCHAT_SANITIZED") != "1":  # ASan's quarantine keeps freed memory
        check(rounds[2] - rounds[0] < 4096,
              "memory flat: RSS %d KiB after round 1, %d KiB after round 3" % (rounds[0], rounds[2]))


def followup(port):
    text = " ".join("word%d" % (i % 97) for i in range(900))
    conv = [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": text}]
    got, _, a = request(port, "POST", "/v1/chat/completions",
                        {"messages": conv, "max_tokens": 8, "seed": 1})
    check(got == 200, "the long conversation: 200")
    p1 = a["usage"]["prompt_tokens"]
    check(p1 > 1800, "the conversation is %d tokens" % p1)
    m = a["choices"][0]["message"]
    conv.append({"role": "assistant", "content": m.get("content") or "",
                 "reasoning_content": m.get("reasoning_content")})
    conv.append({"role": "user", "content": "And then?"})
    t0 = time.time()
    got, _, b = request(port, "POST", "/v1/chat/completions",
                        {"messages": conv, "max_tokens": 8, "seed": 1})
    u = b["usage"]
    new = u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"]
    check(got == 200 and u["prompt_tokens_details"]["cached_tokens"] >= p1 and new <= 8 + 30,
          "the follow-up reuses the %d cached tokens and prefills only its %d new ones "
          "(prompt %d, %.3f s)" % (u["prompt_tokens_details"]["cached_tokens"], new,
                                   u["prompt_tokens"], time.time() - t0))


def top_of(port, body):
    """{token: logprob} of the first answer token's 20 most likely, and its token."""
    body = dict(body, max_tokens=2, logprobs=True, top_logprobs=20, seed=7)
    got, _, a = request(port, "POST", "/v1/chat/completions", body)
    if got != 200:
        return None, None
    lp = a["choices"][0]["logprobs"]["content"]
    return [{e["token"]: e["logprob"] for e in x["top_logprobs"]} for x in lp], lp[0]["token"]


def penalties(port):
    """Presence and frequency penalties look at the answer's tokens only (OpenAI's and
    vLLM's definition): the first token's distribution is the unpenalised one though
    the prompt (and the template's <|im_end|>) holds many tokens; the second lowers
    the first token alone. Seen through the logprobs of a server started with
    --logprobs-mode processed_logprobs (the distribution each token was drawn from)."""
    conv = [{"role": "user", "content": "the the the and and of of of to to to a a"}]
    base, t0 = top_of(port, {"messages": conv, "temperature": 1})
    for key in ("presence_penalty", "frequency_penalty"):
        got, t1 = top_of(port, {"messages": conv, "temperature": 1, key: 2})
        same = got is not None and base is not None and got[0].keys() == base[0].keys() and \
            all(abs(got[0][k] - base[0][k]) < 1e-5 for k in base[0])
        check(same, "%s 2: the first token's logprobs are the unpenalised ones" % key)
        # second token: every other token moves by one constant (the normalisation),
        # the first token (when among the 20) by 2 less
        shift = [got[1][k] - base[1][k] for k in base[1] if k in got[1] and k != t0]
        check(same and t1 == t0 and len(shift) >= 15 and max(shift) - min(shift) < 1e-4 and
              (t0 not in base[1] or t0 not in got[1] or
               abs(got[1][t0] - base[1][t0] - shift[0] + 2) < 1e-4),
              "%s 2: then the answer's token alone is lowered" % key)


def cancel(port):
    """A server with --queue 0 on the random model: one long stream runs, a second
    request gets 503; the stream's client hangs up and the server is free again at once."""
    body = {"messages": USER, "max_tokens": 3000, "stream": True, "temperature": 1}
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    first = b""
    while first.count(b"data: ") < 3:
        first += s.recv(4096)
    check(b" 200 " in first.split(b"\r\n")[0], "a long stream started")
    got, h, busy = request(port, "POST", "/v1/chat/completions", {"messages": USER, "max_tokens": 2})
    check(got == 503 and is_error_object(busy) and h.get("Retry-After") == "1",
          "a second request while it runs (queue 0): 503 with Retry-After (%d)" % got)
    s.close()
    t0 = time.time()
    got = 503
    while got == 503 and time.time() - t0 < 20:
        got, _, _ = request(port, "POST", "/v1/chat/completions", {"messages": USER, "max_tokens": 2})
        if got == 503:
            time.sleep(0.05)
    check(got == 200 and time.time() - t0 < 5,
          "the client hung up: its generation stopped, the next request answered after %.2f s"
          % (time.time() - t0))


def peak_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def bounds(port, pid, clients):
    """CLIENTS connections at once, each sending a 4 MiB body that costs jansson the most
    it can: a million empty arrays (190 MB to parse), 131072 empty objects in messages
    (the most values a body may hold, ~31 MB), or a tool call's arguments holding 1.3
    million values in their JSON text. Each is refused, 400 or 503
    when the bodies in memory reach their budget, and the server's peak memory grows by
    what SERVE_BODY_BUDGET and SERVE_MAX_PARSES allow, not by the number of clients."""
    arrays = ('{"messages": [{"role": "user", "content": "x"}], "x": ['
              + ",".join(["[]"] * 1390000) + "]}").encode()
    objects = ('{"messages": [' + ",".join(["{}"] * 131070) + "]}").encode()
    # a tool call's arguments are JSON inside a string: one value of the body, parsed on
    # its own (1.3 million values, ~310 MB, before they were held to the body's limits)
    call = {"type": "function", "function": {
        "name": "f", "arguments": '{"a": [' + ",".join(["{}"] * 1300000) + "]}"}}
    arguments = json.dumps({"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "r"}]}).encode()
    base = peak_kib(pid)

    def send(body, results, i):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=120)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
            s.sendall(body)
            got = b""
            while b"\r\n\r\n" not in got:
                k = s.recv(4096)
                if not k:
                    break
                got += k
            s.close()
            results[i] = int(got.split(b" ")[1]) if got.startswith(b"HTTP/") else 0
        except OSError as e:
            results[i] = str(e)

    for what, body in (("a million empty arrays", arrays), ("131070 empty objects", objects),
                       ("a tool call's arguments of 1.3M values", arguments)):
        results = [None] * clients
        threads = [threading.Thread(target=send, args=(body, results, i)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(all(r in (400, 503) for r in results),
              "%d clients at once, %s each (%d bytes): all refused (%s)" % (
                  clients, what, len(body), sorted(set(map(str, results)))))
    grown = (peak_kib(pid) - base) // 1024
    print("peak memory: %d MiB before, +%d MiB after %d hostile bodies" % (base // 1024, grown, 3 * clients))
    if os.environ.get("QWENCHAT_SANITIZED") != "1":  # ASan's shadow and quarantine
        check(grown < 256, "peak memory grew by %d MiB (bounded: bodies 64 MiB, 2 parses)" % grown)


def conns(port):
    """Connections as HTTP clients use them: GETs on one kept-alive connection; a client
    that half-closes after its request still gets the whole answer (non-streamed and
    streamed, taking longer than the server's timeout); one that closes for good stops
    its generation."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    socks = set()
    for path in ("/health", "/v1/models", "/health"):
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        socks.add(id(c.sock))
        check(r.status == 200 and r.getheader("Connection") != "close" and c.sock is not None,
              "GET %s on a kept-alive connection" % path)
    check(len(socks) == 1, "the three GETs went over one connection")
    c.close()

    def post(max_tokens, stream):
        body = json.dumps({"messages": USER, "max_tokens": max_tokens, "stream": stream,
                           "temperature": 1}).encode()
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        return s

    for stream in (False, True):
        for n in (4, 1200):
            s = post(n, stream)
            s.shutdown(socket.SHUT_WR)
            t0 = time.time()
            got = b""
            while True:
                k = s.recv(65536)
                if not k:
                    break
                got += k
            s.close()
            head, _, body = got.partition(b"\r\n\r\n")
            if b"chunked" in head.lower():
                body = dechunk(body)
            if stream:
                ok = body.rstrip().endswith(b"data: [DONE]")
            else:
                try:
                    ok = json.loads(body)["usage"]["completion_tokens"] == n
                except (ValueError, KeyError):
                    ok = False
            check(head.startswith(b"HTTP/1.1 200") and ok,
                  "half-closed after a %s request of %d tokens: the whole answer (%.1f s; %r)" % (
                      "streamed" if stream else "non-streamed", n, time.time() - t0, got[-60:]))
    # closed for good: the answer is cut short and the next request is not kept waiting
    s = post(30000, False)
    time.sleep(0.5)
    s.close()
    t0 = time.time()
    got, _, data = request(port, "POST", "/v1/chat/completions", {"messages": USER, "max_tokens": 2})
    check(got == 200 and time.time() - t0 < 5,
          "a non-streamed client that closed: its generation stopped (the next answered after %.2f s)"
          % (time.time() - t0))


def dechunk(b):
    out = b""
    while b:
        size, _, rest = b.partition(b"\r\n")
        n = int(size.split(b";")[0] or b"0", 16)
        if n == 0:
            break
        out += rest[:n]
        b = rest[n + 2:]
    return out


def post_raw(port, body):
    """A chat completion sent on a raw socket (read by the caller)."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
    return s


def whole_reply(got):
    """Whether got holds a reply's headers and the Content-Length they announce."""
    if b"\r\n\r\n" not in got:
        return False
    head, _, rest = got.partition(b"\r\n\r\n")
    length = [ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
    return bool(length) and len(rest) >= int(length[0].split(b":")[1])


def read_all(s, done=lambda got: False, stop=OSError):
    """What s sends until it closes, done(what came) holds, or an exception of the
    stop kind; then closes s."""
    got = b""
    try:
        while True:
            k = s.recv(65536)
            if not k:
                break
            got += k
            if done(got):
                break
    except stop:
        pass
    s.close()
    return got


def stopping(port, pid):
    """A server with --queue 2 on the random model."""
    # greedy: sampled, the random model's near-uniform next token is an end-of-turn one
    # once in ~75,000, and a stream that ends by itself before the SIGTERM (a few
    # thousand tokens here) fails every check below
    stream = post_raw(port, {"messages": USER, "max_tokens": 30000, "stream": True, "temperature": 0})
    first = b""
    while first.count(b"data: ") < 3:
        first += stream.recv(4096)
    waiting = [post_raw(port, {"messages": USER, "max_tokens": 2}) for _ in range(2)]
    time.sleep(0.5)
    for s in waiting:  # reset, not a half-close
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    time.sleep(0.6)  # the server looks at a waiting client's socket every 200 ms
    waiting = [post_raw(port, {"messages": USER, "max_tokens": 2}) for _ in range(2)]
    time.sleep(0.5)
    quiet = not select.select(waiting, [], [], 0)[0]
    check(quiet, "queued clients that hung up left their places: two more wait, not refused")
    for s in waiting:  # a plain close, as a client's timeout closes: its end-of-file
        s.close()
    time.sleep(0.6)
    waiting = [post_raw(port, {"messages": USER, "max_tokens": 2}) for _ in range(2)]
    time.sleep(0.5)
    quiet = not select.select(waiting, [], [], 0)[0]
    check(quiet, "queued clients that closed (end-of-file) hold no place: two more wait")
    got, _, _ = request(port, "POST", "/v1/chat/completions", {"messages": USER, "max_tokens": 2})
    check(got == 503, "... and the queue is full again for the next one: 503 (%d)" % got)
    os.kill(pid, signal.SIGTERM)
    answers = [read_all(s) for s in waiting]
    check(all(a.startswith(b"HTTP/1.1 503") for a in answers),
          "on SIGTERM the waiting requests get 503 (%s)" % [a[:12] for a in answers])
    rest = first + read_all(stream)
    check(not rest.endswith(b"0\r\n\r\n") and b"data: [DONE]" not in rest,
          "the running stream is cut, not ended as if whole (%r)" % rest[-20:])


def cors(port, kport, key):
    """Browser pages: a preflight (no key), an allowed origin's answers carry CORS
    headers (an error's too), another origin is refused before anything runs."""
    pre = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"}
    st, h, _ = request(kport, "OPTIONS", "/v1/chat/completions", headers=pre)
    check(st == 204 and h.get("Access-Control-Allow-Origin") == "http://localhost:3000"
          and "POST" in h.get("Access-Control-Allow-Methods", "")
          and h.get("Access-Control-Allow-Headers") == pre["Access-Control-Request-Headers"],
          "a preflight from a page of this machine, without the key: 204 and what it may send"
          " (%d %s)" % (st, h))
    st, h, _ = request(kport, "OPTIONS", "/v1/models",
                       headers={"Origin": "https://evil.example",
                                "Access-Control-Request-Method": "GET"})
    check(st == 403 and "Access-Control-Allow-Origin" not in h,
          "a preflight from another origin: 403, no CORS headers (%d)" % st)
    st, h, b = request(kport, "GET", "/v1/models", headers={"Origin": "http://127.0.0.1:5173"})
    check(st == 401 and h.get("Access-Control-Allow-Origin") == "http://127.0.0.1:5173",
          "a 401 to an allowed page carries the CORS headers, so it can read why (%d)" % st)
    body = {"messages": USER, "max_tokens": 2, "stream": True}
    st, h, b = request(port, "POST", "/v1/chat/completions", body,
                       headers={"Origin": "https://app.example"})
    check(st == 200 and h.get("Access-Control-Allow-Origin") == "https://app.example"
          and h.get("Vary") == "Origin" and b"data: [DONE]" in b,
          "a stream to an --allow-origin page carries the CORS headers (%d %s)" % (st, h))
    for origin in ("https://evil.example", "null", "http://localhost.evil.example",
                   "https://app.example.evil", "http://127.0.0.1.evil.example:80"):
        st, h, b = request(port, "POST", "/v1/chat/completions", body,
                           headers={"Origin": origin})
        check(st == 403 and is_error_object(b) and b["error"]["code"] == "origin_not_allowed"
              and "Access-Control-Allow-Origin" not in h,
              "a request from %s is refused: 403 origin_not_allowed (%d)" % (origin, st))
    st, h, b = request(port, "GET", "/health")
    check(st == 200 and "Access-Control-Allow-Origin" not in h,
          "a request without Origin (not a browser's) gets no CORS headers")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "hostile":
        hostile(int(args[0]), int(args[1]), args[2], int(args[3]))
    elif cmd == "load":
        load(int(args[0]), int(args[1]), int(args[2]), args[3])
    elif cmd == "followup":
        followup(int(args[0]))
    elif cmd == "penalties":
        penalties(int(args[0]))
    elif cmd == "cancel":
        cancel(int(args[0]))
    elif cmd == "bounds":
        bounds(int(args[0]), int(args[1]), int(args[2]))
    elif cmd == "conns":
        conns(int(args[0]))
    elif cmd == "cors":
        cors(int(args[0]), int(args[1]), args[2])
    elif cmd == "stopping":
        stopping(int(args[0]), int(args[1]))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
