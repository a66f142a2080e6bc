#!/usr/bin/env python3
"""hub-server.py — a stand-in for the Hugging Face Hub, for tests/cli/hub.sh.

Serves ROOT/Org/Name/FILE with the Hub's URL layout /Org/Name/resolve/REV/FILE and
its headers (X-Repo-Commit, ETag = git blob sha1 for small files; a 302 to /cdn/SHA256
with X-Linked-Etag and X-Linked-Size for *.safetensors and *.gguf, like LFS files),
the file list of /api/models/Org/Name/revision/REV ({"sha", "siblings": [{"rfilename"}]}),
Range requests, and fault modes read from STATE/mode on every request:
  drop-once  the next /cdn body stops halfway and the connection is closed
  drop       every /cdn body stops halfway
  corrupt    /cdn bodies have one byte changed
  auth       401 without a token, 403 with another than "secret-token", with the
             Hub's X-Error-Message for a gated repository
  hostile-message  (with auth) that message is long and holds escape sequences
  bad-etag, bad-commit   small files get a path-like ETag / X-Repo-Commit
  bad-sha    the file list's "sha" is a path of 40 characters, not a commit
  cdn-403    large files are sent to the CDN at "localhost" (another host than the
             Hub's 127.0.0.1), which refuses them with 403
  any-revision  every revision is answered with the repository's one commit (a Hub
             that ignores a pinned commit)
  head-503-once  the next HEAD of a file answers 503 with Retry-After: 1
  get-429-once   the next /cdn GET answers 429 with Retry-After: 1
  short-once     the next /cdn body is close-delimited (no Content-Length) and ends
                 halfway: a clean end of a short body, as a proxy may send
  slow           /cdn bodies trickle (for the test of two pulls sharing a lock)
  cdn-loop       a /cdn GET is redirected to /cdn/loop, and that to itself
  long-once      the next /cdn body is 1000 bytes longer than its Content-Length
  http09-once    the next /cdn GET is answered without a status line (HTTP/0.9)
  big-list       the file list holds 600,000 more (empty) entries
  api-503-once   the next file list answers 503 with Retry-After: 1
  api-drop-once  the next file list request is closed without an answer
Every request is logged to STATE/log as "METHOD PATH RANGE AUTH". The port goes to
STATE/port. Binds 127.0.0.1 only and exits by itself after --lifetime seconds.
Standard library only.
"""
import argparse
import hashlib
import http.server
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

TOKEN = "secret-token"


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Hub:
    def __init__(self, root, state):
        self.root, self.state = root, state
        self.lock = threading.Lock()
        self.dropped = False
        self.fired = set()  # the *-once faults already sent

    def once(self, fault):
        """True the first time `fault` is both set and asked for."""
        if fault not in self.mode():
            return False
        with self.lock:
            if fault in self.fired:
                return False
            self.fired.add(fault)
            return True

    def mode(self):
        try:
            with open(os.path.join(self.state, "mode")) as f:
                return f.read().split()
        except OSError:
            return []

    def log(self, line):
        with self.lock, open(os.path.join(self.state, "log"), "a") as f:
            f.write(line + "\n")

    def by_sha256(self, digest):
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    data = f.read()
                if hashlib.sha256(data).hexdigest() == digest:
                    return data
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub = None

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, headers, body=b"", send_body=True):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def error(self, status, code, send_body, extra=None):
        headers = {"X-Error-Code": code, "X-Error-Message": code}
        headers.update(extra or {})
        self.reply(status, headers, b'{"error":"%s"}' % code.encode(), send_body)

    def handle_any(self, send_body):
        hub = self.hub
        self.hub.log("%s %s %s %s" % (self.command, self.path, self.headers.get("Range", "-"),
                                      "auth" if self.headers.get("Authorization") else "-"))
        path = urllib.parse.urlsplit(self.path).path
        if not send_body and "/resolve/" in path and hub.once("head-503-once"):
            return self.error(503, "Unavailable", send_body, {"Retry-After": "1"})
        if send_body and path.startswith("/cdn/") and hub.once("get-429-once"):
            return self.error(429, "TooManyRequests", send_body, {"Retry-After": "1"})
        if send_body and path.startswith("/cdn/") and "cdn-loop" in hub.mode():
            port = self.server.server_address[1]
            return self.reply(302, {"Location": "http://127.0.0.1:%d/cdn/loop" % port})
        if send_body and path.startswith("/cdn/") and hub.once("http09-once"):
            self.wfile.write(b"stray bytes\r\n")
            self.wfile.flush()
            self.close_connection = True
            return None
        if send_body and path.startswith("/cdn/") and "cdn-403" in hub.mode():
            return self.error(403, "Forbidden", send_body)
        if path.startswith("/cdn/"):
            data = hub.by_sha256(path[5:])
            if data is None:
                return self.error(404, "NotFound", send_body)
            return self.serve_bytes(data, {}, send_body, cdn=True)
        parts = path.split("/")
        if parts[1] == "api" and hub.once("api-503-once"):
            return self.error(503, "Unavailable", send_body, {"Retry-After": "1"})
        if parts[1] == "api" and hub.once("api-drop-once"):
            self.close_connection = True
            return None
        if len(parts) == 7 and parts[1] == "api" and parts[2] == "models" and parts[5] == "revision":
            return self.api_revision(parts[3], parts[4], urllib.parse.unquote(parts[6]), send_body)
        # ['', org, name, 'resolve', rev, file...]
        if len(parts) < 6 or parts[3] != "resolve":
            return self.error(404, "NotFound", send_body)
        org, name = parts[1], parts[2]
        rev = urllib.parse.unquote(parts[4])
        file = urllib.parse.unquote("/".join(parts[5:]))
        repo = os.path.join(hub.root, org, name)
        auth = self.headers.get("Authorization")
        if "auth" in hub.mode() and auth != "Bearer " + TOKEN:
            return self.gated(org + "/" + name, auth, send_body)
        if not os.path.isdir(repo):
            return self.error(404, "RepoNotFound", send_body)
        commit = hashlib.sha1(("%s/%s" % (org, name)).encode()).hexdigest()
        if rev not in ("main", commit) and "any-revision" not in hub.mode():
            return self.error(404, "RevisionNotFound", send_body)
        fpath = os.path.join(repo, file)
        if ".." in file or not os.path.isfile(fpath):
            return self.error(404, "EntryNotFound", send_body, {"X-Repo-Commit": commit})
        with open(fpath, "rb") as f:
            data = f.read()
        if file.endswith((".safetensors", ".gguf")):
            digest = hashlib.sha256(data).hexdigest()
            port = self.server.server_address[1]
            return self.reply(302, {
                "X-Repo-Commit": commit, "ETag": '"%s"' % digest,
                "X-Linked-Etag": '"%s"' % digest, "X-Linked-Size": str(len(data)),
                "Location": "http://%s:%d/cdn/%s?sig=x" % (
                    "localhost" if "cdn-403" in hub.mode() else "127.0.0.1", port, digest)},
                b"", send_body)
        headers = {"X-Repo-Commit": commit, "ETag": '"%s"' % git_sha1(data)}
        if "bad-etag" in hub.mode():
            headers["ETag"] = '"../../../escape"'
        if "bad-commit" in hub.mode():
            headers["X-Repo-Commit"] = "../main"
        return self.serve_bytes(data, headers, send_body, cdn=False)

    def gated(self, repo, auth, send_body):
        if auth:
            status, msg = 403, ("Access to model %s is restricted and you are not in the "
                                "authorized list. Visit https://huggingface.co/%s to ask for "
                                "access." % (repo, repo))
        else:
            status, msg = 401, ("Access to model %s is restricted. You must have access to "
                                "it and be authenticated to access it. Please log in." % repo)
        if "hostile-message" in self.hub.mode():
            msg = "\x1b]0;owned\x07\x1b[2J" + msg + " x" * 2000
        return self.error(status, "GatedRepo", send_body, {"X-Error-Message": msg})

    def api_revision(self, org, name, rev, send_body):
        repo = os.path.join(self.hub.root, org, name)
        if not os.path.isdir(repo):
            return self.error(404, "RepoNotFound", send_body)
        commit = hashlib.sha1(("%s/%s" % (org, name)).encode()).hexdigest()
        if rev not in ("main", commit) and "any-revision" not in self.hub.mode():
            return self.error(404, "RevisionNotFound", send_body)
        files = []
        for dirpath, _, names in os.walk(repo):
            for n in names:
                files.append(os.path.relpath(os.path.join(dirpath, n), repo))
        if "bad-sha" in self.hub.mode():
            commit = "../../../escaped".ljust(40, "x")
        siblings = [{"rfilename": f} for f in sorted(files)]
        if "big-list" in self.hub.mode():
            siblings += [[]] * 600000
        body = json.dumps({"id": "%s/%s" % (org, name), "sha": commit,
                           "siblings": siblings}).encode()
        return self.reply(200, {"Content-Type": "application/json"}, body, send_body)

    def serve_bytes(self, data, headers, send_body, cdn):
        start, status = 0, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(data):
                return self.error(416, "RangeNotSatisfiable", send_body)
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        body = data[start:]
        mode = self.hub.mode() if cdn and send_body else []
        if "corrupt" in mode and body:
            body = body[:len(body) // 2] + bytes([body[len(body) // 2] ^ 0xFF]) + body[len(body) // 2 + 1:]
        drop = "drop" in mode
        if "drop-once" in mode:
            with self.hub.lock:
                drop, self.hub.dropped = not self.hub.dropped, True
        headers["Accept-Ranges"] = "bytes"
        if cdn and send_body and self.hub.once("short-once"):
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return None
        if cdn and send_body and len(body) > 1000 and self.hub.once("long-once"):
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body) - 1000))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return None
        if cdn and send_body and "slow" in mode:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            step = max(1, len(body) // 20)
            for i in range(0, len(body), step):
                self.wfile.write(body[i:i + step])
                self.wfile.flush()
                time.sleep(0.1)
            return None
        if not drop:
            return self.reply(status, headers, body, send_body)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[:len(body) // 2])
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def do_HEAD(self):
        self.handle_any(False)

    def do_GET(self):
        self.handle_any(True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    Handler.hub = Hub(a.root, a.state)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    tmp = os.path.join(a.state, "port.tmp")
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, os.path.join(a.state, "port"))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    time.sleep(a.lifetime)
    sys.exit(0)


if __name__ == "__main__":
    main()
