#!/usr/bin/env python3
"""remote-server.py — a stand-in for an OpenAI-compatible server (vLLM, SGLang), for
tests/cli/remote.sh. Standard library only; binds 127.0.0.1 only and exits by itself
after --lifetime seconds.

GET /v1/models answers as vLLM does ({"object": "list", "data": [{"id", "object":
"model", "owned_by": "vllm", "max_model_len", ...}]}). POST /v1/chat/completions
answers with the stream the mode asks for, as uvicorn sends it (HTTP/1.1, chunked,
text/event-stream, each event "data: JSON\\n\\n"). The mode is the first line of
STATE/mode, read per request; when the file has more lines, the first is removed
(so "busy\\nvllm" answers 429 once, then streams). Every request body is appended to
STATE/requests (one JSON line each, with the Authorization header it came with).
With STATE/key present, a request without "Authorization: Bearer <key>" gets vLLM's
401 ({"error": "Unauthorized"}). The port goes to STATE/port; with --tls CERT KEY a
second, TLS listener's port goes to STATE/tls-port, and --blackhole writes the port
of a listening socket that never accepts (its queue is full: connecting hangs) to
STATE/blackhole-port.

Modes and the real behaviour each imitates:
  vllm        vLLM 0.9 `--reasoning-parser qwen3`: a role chunk {"role": "assistant",
              "content": ""}, "reasoning_content" deltas token by token ("<think>"
              itself sends nothing), "content" deltas, a finish chunk with an empty
              delta and "stop_reason": null, the usage chunk with "choices": [] when
              stream_options.include_usage is set, "data: [DONE]". Fields left unset
              are left out (model_dump_json(exclude_unset=True)). With
              chat_template_kwargs.enable_thinking false: no reasoning.
  vllm-new    recent vLLM: the delta field is named "reasoning".
  no-usage    like vllm, but no usage chunk even when asked (an older server).
  query       like vllm, behind a gateway whose URL carries ?api-version=2024-10-21:
              a request without that query gets 404.
  sglang      SGLang `--reasoning-parser qwen3`: every field written, null when
              unused, "usage": null in every chunk but the last, the finish chunk
              with "matched_stop": 151645.
  no-parser   a server without a reasoning parser (vLLM without --reasoning-parser,
              llama-server --reasoning-format none): "<think>\\n...\\n</think>\\n\\n" in the
              content, the tags split across deltas.
  tools       vLLM `--enable-auto-tool-choice --tool-call-parser hermes`: the call's
              id, type and name in one delta, its arguments in pieces, finish_reason
              "tool_calls".
  echo        like vllm; the answer says how many messages came and quotes the last.
  slow        like vllm, a long answer, one delta every 0.2 s (to stop it mid-way).
  cut         the connection closes in the middle of an event (a server that died).
  cut-early   the stream's headers, then a body that is not chunked as it says (no
              event came).
  cut-first   the connection closes in the middle of the first event.
  badjson     an event whose data is not JSON.
  error       some content, then vLLM's mid-stream error event {"error": {"message",
              "type": "InternalServerError", ...}} and [DONE].
  busy        429 Too Many Requests with Retry-After: 1 and an OpenAI error body (a
              rate-limiting proxy in front of vLLM).
  busy-long   429 with Retry-After: 3600.
  fail500     500 with vLLM's error body.
  stall       the role chunk and one delta, then nothing for a minute (a hung server).
  quote-key   400 whose message quotes the Authorization header it got.
  quote-key-cut  the same after 270 bytes of padding, so that a message cut to one
              line would end inside the key.
  quote-key-escaped  as quote-key-cut, the key spelled with JSON escapes (\\uXXXX,
              as a PHP or Go server may escape characters), so that the body's raw
              text does not hold it.
  quote-key-event  a stream whose first event is an error quoting the key that way.
  done-open   like vllm, but after [DONE] the connection stays open, an SSE comment
              every 0.3 s for a minute (a proxy's keep-alive pings).
  error-endless  500 whose body never ends (1 KiB every 50 ms).
  models-busy  GET /v1/models answers 429 with Retry-After: 1 (then the next mode).
  html        200 with a text/html body (a URL that is not an API).
  big-header  200 with a header line of 200 KB (past libcurl's limit), then a stream.
  redirect    307 to another host, the request's path and query kept and a user:password
              added (a gateway moved; its Location may carry a key).
  no-models   GET /v1/models answers 404 (a server without a model list); chat
              requests stream as vllm.
  huge-models GET /v1/models answers 200 with 9 MiB of JSON (a broken or hostile
              server); chat requests stream as vllm.
  many-models GET /v1/models lists 30 models named by their path as vLLM names them
              (/models/hub/Qwen--Qwen3-30B-A3B-Instruct-2507-FP8-00 to -29); chat
              requests stream as vllm.
  usage-huge  like vllm, the usage chunk saying 2^30 prompt and 2^30 completion tokens
              (the most a count may be; their sum is past a 32-bit int).
  models-hang  the first GET /v1/models answers 404 (no model list), every later one
              never answers (a server that hangs while the client asks again).
"""
import argparse
import gzip
import io
import json
import os
import socket
import ssl
import sys
import threading
import time
import http.server

MODEL = "Qwen/Qwen3-32B"
REASONING = ["\n", "The", " user", " greets", " me", ";", " answer", " briefly",
             " in", " French", " (caf\u00e9)", ".\n"]
ANSWER = ["\n\n", "Bonjour", " !", " Un", " caf\u00e9", " ?", " \u4e16\u754c"]


class State:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def file(self, name):
        return os.path.join(self.path, name)

    def mode(self):
        with self.lock:
            try:
                with open(self.file("mode")) as f:
                    lines = [l.strip() for l in f if l.strip()]
            except OSError:
                return "vllm"
            if len(lines) > 1:
                with open(self.file("mode"), "w") as f:
                    f.write("\n".join(lines[1:]) + "\n")
            return lines[0] if lines else "vllm"

    def peek(self):
        try:
            with open(self.file("mode")) as f:
                return f.readline().strip()
        except OSError:
            return "vllm"

    def key(self):
        try:
            with open(self.file("key")) as f:
                return f.read().strip()
        except OSError:
            return None

    def log(self, line):
        with self.lock, open(self.file("requests"), "a") as f:
            f.write(line + "\n")


def chunk(delta, finish=None, **extra):
    c = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000,
         "model": MODEL, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                      "finish_reason": finish}]}
    if finish is not None:
        c["choices"][0]["stop_reason"] = None
    c.update(extra)
    return c


def sglang_chunk(delta, finish=None):
    d = {"role": None, "content": None, "reasoning_content": None, "tool_calls": None}
    d.update(delta)
    return {"id": "sgl-test", "object": "chat.completion.chunk", "created": 1700000000,
            "model": MODEL, "choices": [{"index": 0, "delta": d, "logprobs": None,
                                         "finish_reason": finish,
                                         "matched_stop": 151645 if finish else None}],
            "usage": None}


def usage_chunk(prompt, completion):
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000,
            "model": MODEL, "choices": [],
            "usage": {"prompt_tokens": prompt, "total_tokens": prompt + completion,
                      "completion_tokens": completion}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-vllm/0"

    def log_message(self, fmt, *args):
        pass

    def json_reply(self, status, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        key = self.server.state.key()
        if key is None or self.headers.get("Authorization") == "Bearer " + key:
            return True
        self.json_reply(401, {"error": "Unauthorized"})
        return False

    def route(self):
        """The path without the query a gateway's URL carries (?api-version=...); the
        "query" mode requires that one on every request."""
        path, _, query = self.path.partition("?")
        if self.server.state.peek() == "query" and query != "api-version=2024-10-21":
            return None
        return path

    def do_GET(self):
        if not self.authorized():
            return
        if self.server.state.peek() == "models-busy":
            self.server.state.mode()  # once
            self.json_reply(429, {"error": {"message": "Rate limit reached"}},
                            headers=[("Retry-After", "1")])
            return
        if self.server.state.peek() == "models-hang":
            self.server.models_asked = getattr(self.server, "models_asked", 0) + 1
            if self.server.models_asked > 1:
                time.sleep(60)
                return
        if self.route() != "/v1/models" or self.server.state.peek() in ("no-models",
                                                                     "models-hang"):
            self.json_reply(404, {"detail": "Not Found"})
            return
        if self.server.state.peek() == "many-models":
            self.json_reply(200, {"object": "list", "data": [
                {"id": "/models/hub/Qwen--Qwen3-30B-A3B-Instruct-2507-FP8-%02d" % i,
                 "object": "model", "owned_by": "vllm"} for i in range(30)]})
            return
        if self.server.state.peek() == "huge-models":
            self.close_connection = True
            try:  # the client stops reading at its cap
                self.json_reply(200, {"object": "list", "data": [
                    {"id": "m%07d" % i, "object": "model", "owned_by": "x" * 64}
                    for i in range(80000)]})
            except OSError:
                pass
            return
        self.json_reply(200, {"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": 1700000000, "owned_by": "vllm",
             "root": MODEL, "parent": None, "max_model_len": 40960, "permission": []}]})

    # -- the event stream, chunked as uvicorn sends it --
    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def raw(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, obj):
        text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False,
                                                           separators=(",", ":"))
        self.raw(("data: " + text + "\n\n").encode())

    def end_stream(self):
        self.event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        st = self.server.state
        st.log(json.dumps({"auth": self.headers.get("Authorization"),
                           "body": json.loads(body), "path": self.path}))
        if not self.authorized():
            return
        req = json.loads(body)
        if self.route() != "/v1/chat/completions":
            self.json_reply(404, {"detail": "Not Found"})
            return
        if req.get("model") != MODEL:
            self.json_reply(404, {"error": {
                "message": "The model `%s` does not exist." % req.get("model"),
                "type": "NotFoundError", "param": "model", "code": 404}})
            return
        mode = st.mode()
        try:
            getattr(self, "mode_" + mode.replace("-", "_"))(req)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped the answer

    def think(self, req):
        kw = req.get("chat_template_kwargs") or {}
        return kw.get("enable_thinking", True)

    def usage(self, req, completion):
        if self.server.state.peek() == "no-usage":
            return
        if (req.get("stream_options") or {}).get("include_usage"):
            prompt = sum(len(m.get("content") or "") for m in req["messages"]) // 4 + 9
            if getattr(self, "huge", False):
                prompt = completion = 1 << 30
            self.event(usage_chunk(prompt, completion))

    def vllm_like(self, req, field="reasoning_content", answer=ANSWER, delay=0):
        self.start_stream()
        self.event(chunk({"role": "assistant", "content": ""}))
        n = 0
        if self.think(req):
            for t in REASONING:
                self.event(chunk({field: t}))
                n += 1
        for t in answer:
            self.event(chunk({"content": t}))
            n += 1
            time.sleep(delay)
        self.event(chunk({}, "stop"))
        self.usage(req, n + 2)
        self.end_stream()

    def mode_vllm(self, req):
        self.vllm_like(req)

    def mode_usage_huge(self, req):
        self.huge = True
        self.vllm_like(req)

    def mode_many_models(self, req):
        self.vllm_like(req)

    def mode_no_models(self, req):
        self.vllm_like(req)

    def mode_huge_models(self, req):
        self.vllm_like(req)

    def mode_no_usage(self, req):
        self.vllm_like(req)

    def mode_query(self, req):
        self.vllm_like(req)

    def mode_vllm_new(self, req):
        self.vllm_like(req, field="reasoning")

    def mode_slow(self, req):
        self.vllm_like(req, answer=ANSWER + [" encore"] * 100, delay=0.2)

    def mode_echo(self, req):
        last = req["messages"][-1]["content"]
        self.vllm_like(req, answer=["%d messages; " % len(req["messages"]), "you said: ",
                                    last])

    def mode_sglang(self, req):
        self.start_stream()
        self.event(sglang_chunk({"role": "assistant", "content": ""}))
        for t in REASONING if self.think(req) else []:
            self.event(sglang_chunk({"reasoning_content": t}))
        for t in ANSWER:
            self.event(sglang_chunk({"content": t}))
        self.event(sglang_chunk({}, "stop"))
        if (req.get("stream_options") or {}).get("include_usage"):
            u = usage_chunk(30, 20)
            u["usage"]["prompt_tokens_details"] = None
            self.event(u)
        self.end_stream()

    def mode_no_parser(self, req):
        self.start_stream()
        self.event(chunk({"role": "assistant", "content": ""}))
        text = "<think>" + "".join(REASONING) + "</think>" + "".join(ANSWER)
        pieces = [text[i:i + 5] for i in range(0, len(text), 5)]  # tags split
        for t in pieces:
            self.event(chunk({"content": t}))
        self.event(chunk({}, "stop"))
        self.usage(req, len(pieces))
        self.end_stream()

    def mode_tools(self, req):
        self.start_stream()
        self.event(chunk({"role": "assistant", "content": ""}))
        self.event(chunk({"tool_calls": [{"id": "chatcmpl-tool-5f1", "type": "function",
                                          "index": 0,
                                          "function": {"name": "get_weather"}}]}))
        for piece in ['{"city": ', '"Paris", ', '"unit": "C"}']:
            self.event(chunk({"tool_calls": [{"index": 0,
                                              "function": {"arguments": piece}}]}))
        self.event(chunk({}, "tool_calls"))
        self.usage(req, 12)
        self.end_stream()

    def mode_cut(self, req):
        self.start_stream()
        self.event(chunk({"role": "assistant", "content": ""}))
        self.event(chunk({"content": "Bonjour"}))
        self.raw(b'data: {"id":"chatcmpl-test","choices":[{"index":0,"delta":{"cont')
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def mode_cut_early(self, req):
        self.start_stream()
        self.wfile.write(b"zz\r\n")  # not a chunk size: the body breaks before any event
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def mode_cut_first(self, req):
        self.start_stream()
        self.raw(b'data: {"id":"chatcmpl-test","choices":[{"index":0,"delta":{"ro')
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def mode_badjson(self, req):
        self.start_stream()
        self.event(chunk({"role": "assistant", "content": ""}))
        self.event(chunk({"content": "Bonjour"}))
        self.event("{not json at all")
        self.end_stream()

    def mode_error(self, req):
        self.start_stream()
        self.event(chunk({"role": "assistant", "content": ""}))
        self.event(chunk({"content": "Bonjour, "}))
        self.event({"error": {"object": "error", "message": "CUDA out of memory",
                              "type": "InternalServerError", "param": None, "code": 500}})
        self.end_stream()

    def mode_busy(self, req):
        self.json_reply(429, {"error": {"message": "Rate limit reached, slow down",
                                        "type": "rate_limit_error", "code": 429}},
                        headers=[("Retry-After", "1")])

    def mode_busy_long(self, req):
        self.json_reply(429, {"error": {"message": "Rate limit reached",
                                        "type": "rate_limit_error", "code": 429}},
                        headers=[("Retry-After", "3600")])

    def mode_fail500(self, req):
        self.json_reply(500, {"error": {"object": "error", "message": "EngineCore died",
                                        "type": "InternalServerError", "param": None,
                                        "code": 500}})

    def mode_stall(self, req):
        self.start_stream()
        self.event(chunk({"role": "assistant", "content": ""}))
        self.event(chunk({"content": "Bonjour"}))
        time.sleep(60)

    def mode_quote_key(self, req):
        self.json_reply(400, {"error": {"message": "bad request from %s"
                                        % self.headers.get("Authorization"),
                                        "type": "BadRequestError", "code": 400}})

    def mode_quote_key_cut(self, req):
        self.json_reply(400, {"error": {"message": "x" * 270 + " from %s"
                                        % self.headers.get("Authorization")}})

    def escaped_key_message(self):
        auth = self.headers.get("Authorization") or ""
        return '{"error": {"message": "%s from %s"}}' % (
            "x" * 270, "".join("\\u%04x" % ord(c) for c in auth))

    def mode_quote_key_escaped(self, req):
        body = self.escaped_key_message().encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def mode_quote_key_event(self, req):
        self.start_stream()
        self.event(self.escaped_key_message())
        self.end_stream()
        self.raw(b"")

    def mode_done_open(self, req):
        self.end_stream = lambda: self.event("[DONE]")  # no last chunk: the body goes on
        self.vllm_like(req)
        for _ in range(200):
            self.raw(b": ping\n\n")
            time.sleep(0.3)

    def mode_error_endless(self, req):
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        for _ in range(1200):
            self.wfile.write(b"x" * 1024)
            self.wfile.flush()
            time.sleep(0.05)

    def mode_gzip(self, req):
        # A proxy compressing the stream: the client asked for it (Accept-Encoding) and
        # decodes it, as httpx does for the openai client.
        if "gzip" not in (self.headers.get("Accept-Encoding") or ""):
            self.json_reply(406, {"error": {"message": "gzip only"}})
            return
        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb") as z:
            self.start_stream = lambda: None
            self.raw = z.write
            self.end_stream = lambda: self.event("[DONE]")
            self.vllm_like(req)
        body = out.getvalue()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def mode_html(self, req):
        body = b"<html><body>It works!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def mode_big_header(self, req):
        self.send_response(200)
        self.send_header("X-Big", "a" * (200 << 10))
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.close_connection = True

    def mode_redirect(self, req):
        self.json_reply(307, {"error": {"message": "moved"}},
                        headers=[("Location", "http://u:pw@127.0.0.1:1" + self.path + "#f")])


def serve(srv):
    try:
        srv.serve_forever()
    except Exception:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    ap.add_argument("--lifetime", type=float, default=120)
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--blackhole", action="store_true")
    a = ap.parse_args()
    st = State(a.state)
    http.server.ThreadingHTTPServer.daemon_threads = True
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.state = st
    threading.Thread(target=serve, args=(srv,), daemon=True).start()
    if a.tls:
        tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        tls.state = st
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*a.tls)
        tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
        threading.Thread(target=serve, args=(tls,), daemon=True).start()
        with open(st.file("tls-port.tmp"), "w") as f:
            f.write(str(tls.server_address[1]))
        os.rename(st.file("tls-port.tmp"), st.file("tls-port"))
    keep = []
    if a.blackhole:
        # A listener that never accepts, its queue filled: a new SYN is dropped, so
        # connecting hangs until the client's connect timeout.
        hole = socket.socket()
        hole.bind(("127.0.0.1", 0))
        hole.listen(0)
        for _ in range(4):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(hole.getsockname())
            except BlockingIOError:
                pass
            keep.append(c)
        keep.append(hole)
        with open(st.file("blackhole-port.tmp"), "w") as f:
            f.write(str(hole.getsockname()[1]))
        os.rename(st.file("blackhole-port.tmp"), st.file("blackhole-port"))
    with open(st.file("port.tmp"), "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(st.file("port.tmp"), st.file("port"))
    time.sleep(a.lifetime)
    sys.exit(0)


if __name__ == "__main__":
    main()
