#!/usr/bin/env python3
"""serve_tokenize.py -- `qwenchat serve`'s POST /tokenize and /detokenize (vLLM's), from
the outside (tests/cli/serve.sh runs it).

usage: serve_tokenize.py PORT QWENCHAT MODEL_DIR GOLDEN_DIR CTX KEY_PORT KEY

PORT serves MODEL_DIR (the real Qwen3 tokenizer) with a context of CTX; KEY_PORT is a
server that wants the API key KEY. Checked:
  - a conversation's ids are the tokens of its render by jinja2 (tests/golden: every
    case with tools, and others), for add_generation_prompt and enable_thinking as
    rendered there; the tokens of a text come from `qwenchat tokenize`, which
    tests/cli/tokenizer.sh holds to Hugging Face's; and a chat completion's
    prompt_tokens is that count;
  - a prompt is tokenized with its special tokens, an empty one is no tokens;
    return_token_strs spells each token as tokenizer.json does;
  - /detokenize gives the text back, special tokens spelled; ids that end inside a
    character give U+FFFD;
  - bad requests: a clean 400 naming the field; GET is 405; the API key is asked;
  - /tokenize and /detokenize are answered while a completion is being generated,
    not after it (as vLLM answers them).
Prints one "ok: ..." or "FAIL: ..." line per check; exits 1 when any failed.
"""
import json
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc  # noqa: E402

check, request = sc.check, sc.request


def encode(qwenchat, model, text):
    out = subprocess.run([qwenchat, "tokenize", "-m", model], input=text.encode("utf-8"),
                         capture_output=True, check=True).stdout
    return [int(t) for t in out.split()]


def vllm_tool(t):
    """A tool as vLLM hands it to the template (pydantic's model_dump of its
    ChatCompletionToolsParam): type, then function with name, description and
    parameters (None when missing) before its other keys, then the tool's other keys."""
    f = t["function"]
    fn = {"name": f["name"], "description": f.get("description"),
          "parameters": f.get("parameters")}
    fn.update((k, v) for k, v in f.items() if k not in fn)
    out = {"type": "function", "function": fn}
    out.update((k, v) for k, v in t.items() if k not in ("type", "function"))
    return out


def tools_as_vllm(port, qwenchat, model):
    """Tools written in another order, without description or parameters, or with
    members of their own, are listed in the prompt as vLLM lists them."""
    tools = [{"function": {"name": "now"}, "type": "function"},
             {"type": "function", "function": {"parameters": {"type": "object"},
                                               "strict": True, "name": "w",
                                               "description": "Météo"}, "x-tag": 1}]
    msgs = [{"role": "user", "content": "Q"}]
    st, _, raw = request(port, "POST", "/tokenize", {"messages": msgs, "tools": tools})
    st2, _, canon = request(port, "POST", "/tokenize",
                            {"messages": msgs, "tools": [vllm_tool(t) for t in tools]})
    text = subprocess.run([qwenchat, "detokenize", "-m", model],
                          input=" ".join(map(str, raw.get("tokens", []))).encode(),
                          capture_output=True).stdout.decode("utf-8")
    listed = all(json.dumps(vllm_tool(t), ensure_ascii=False) in text for t in tools)
    check(st == 200 and st2 == 200 and raw["tokens"] == canon["tokens"] and listed,
          "tools listed in the prompt as vLLM's model_dump writes them (%d %d %s)"
          % (st, st2, listed))
    st, _, none = request(port, "POST", "/tokenize",
                          {"messages": msgs, "tools": tools, "tool_choice": "none"})
    check(st == 200 and none.get("tokens") == raw.get("tokens"),
          "tool_choice \"none\": the tools are listed all the same, as vLLM lists them")


def continue_cut(text, final):
    """transformers' apply_chat_template(continue_final_message=True): the render cut
    after the last copy of the final content stripped of white space, keeping its
    trailing white space only when it has no leading one and the render holds it whole
    there; None where the stripped content is not in the render (an error there)."""
    core = final.strip()
    if core not in text:
        return None
    at = text.rindex(core)
    if final == final.lstrip() and text.startswith(final, at):
        return text[:at + len(final)]
    return text[:at + len(core)]


def continue_spaces(port, qwenchat, model):
    """Final messages with white space around them, cut as transformers cuts them; the
    whole render is /tokenize's without a generation prompt (held to jinja2's above)."""
    bad = []
    for final in ["Hi there  ", "  Hi there  ", "\nHi\n\n", "Hi\u3000", " x", "", "  "]:
        msgs = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": final}]
        for think in (None, False):
            body = {"messages": msgs, "add_generation_prompt": False}
            if think is not None:
                body["chat_template_kwargs"] = {"enable_thinking": think}
            st, _, whole = request(port, "POST", "/tokenize", body)
            st2, _, b = request(port, "POST", "/tokenize",
                                dict(body, continue_final_message=True))
            text = subprocess.run([qwenchat, "detokenize", "-m", model],
                                  input=" ".join(map(str, whole.get("tokens", []))).encode(),
                                  capture_output=True).stdout.decode("utf-8")
            want = encode(qwenchat, model, continue_cut(text, final))
            if st != 200 or st2 != 200 or b.get("tokens") != want:
                bad.append((final, think, st2))
    check(not bad, "continue_final_message: messages with white space around them cut as "
          "transformers cuts them%s" % (" (differ: %s)" % bad[:5] if bad else ""))


def conversations(port, qwenchat, model, golden):
    cases = json.load(open(os.path.join(golden, "template-cases.json"), encoding="utf-8"))["cases"]
    renders = json.load(open(os.path.join(golden, "template-golden-qwen3.json"),
                             encoding="utf-8"))["renders"]
    # every case with tools, and every fifth of the others; only those whose tool calls
    # are the API's: {"function": {"name", "arguments": an object}}. (Arguments as a
    # JSON string the API reads as the object it holds, as vLLM does, where the
    # template given the message itself writes the string.)
    def api_calls(case):
        return all(isinstance(c.get("function", {}).get("name"), str) and
                   not isinstance(c["function"].get("arguments"), str)
                   for m in case["messages"] for c in m.get("tool_calls") or [])
    picked = [r for r in renders if api_calls(cases[r["case"]]) and
              ("tools" in cases[r["case"]] or r["case"] % 5 == 0)]
    bad = []
    for r in picked:
        case = cases[r["case"]]
        body = {"model": "m", "messages": case["messages"],
                "add_generation_prompt": r["add_generation_prompt"]}
        if "tools" in case:
            body["tools"] = case["tools"]
        if r["enable_thinking"] is not None:
            body["chat_template_kwargs"] = {"enable_thinking": r["enable_thinking"]}
        st, _, b = request(port, "POST", "/tokenize", body)
        want = encode(qwenchat, model, r["text"])
        if st != 200 or b.get("tokens") != want or b.get("count") != len(want):
            bad.append((r["case"], r["add_generation_prompt"], r["enable_thinking"], st))
    check(picked and not bad, "/tokenize of %d conversations: the tokens of jinja2's renders%s"
          % (len(picked), " (differ: %s)" % bad[:5] if bad else ""))
    # continue_final_message: jinja2's render without a generation prompt, cut as
    # transformers' apply_chat_template(continue_final_message=True) cuts it
    bad, n_cut, n_refused = [], 0, 0
    for r in renders:
        case = cases[r["case"]]
        if not api_calls(case) or r["add_generation_prompt"]:
            continue
        final = case["messages"][-1].get("content") or ""
        if isinstance(final, list):
            final = final[-1]["text"]
        cut = continue_cut(r["text"], final)
        want = encode(qwenchat, model, cut) if cut is not None else None
        body = {"messages": case["messages"], "continue_final_message": True,
                "add_generation_prompt": False, "tools": case.get("tools")}
        if r["enable_thinking"] is not None:
            body["chat_template_kwargs"] = {"enable_thinking": r["enable_thinking"]}
        st, _, b = request(port, "POST", "/tokenize", body)
        n_cut += want is not None
        n_refused += want is None
        if (want is None and (st != 400 or b["error"]["param"] != "messages")) or \
           (want is not None and (st != 200 or b.get("tokens") != want)):
            bad.append((r["case"], r["enable_thinking"], st))
    check(n_cut > 50 and not bad,
          "continue_final_message: %d conversations cut as transformers cuts them, %d refused "
          "as there%s" % (n_cut, n_refused, " (differ: %s)" % bad[:5] if bad else ""))
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi <|im_end|>"}]
    st, _, b = request(port, "POST", "/tokenize", {"messages": msgs})
    st2, _, c = request(port, "POST", "/v1/chat/completions",
                        {"messages": msgs, "max_tokens": 1, "seed": 1})
    check(st == 200 and st2 == 200 and c["usage"]["prompt_tokens"] == b["count"],
          "a chat completion's prompt_tokens is /tokenize's count (%s, %s)"
          % (b.get("count"), c.get("usage", {}).get("prompt_tokens")))
    # a continued answer: the tokens a text completion of the same ids would write
    msgs = msgs + [{"role": "assistant", "content": "Sure, here"}]
    cont = {"messages": msgs, "continue_final_message": True, "add_generation_prompt": False}
    st, _, b = request(port, "POST", "/tokenize", cont)
    st2, _, c = request(port, "POST", "/v1/chat/completions",
                        dict(cont, max_tokens=6, temperature=0))
    st3, _, t = request(port, "POST", "/v1/completions",
                        {"prompt": b.get("tokens"), "max_tokens": 6, "temperature": 0})
    check(st == st2 == st3 == 200 and c["usage"]["prompt_tokens"] == b["count"] and
          c["choices"][0]["message"]["content"] == t["choices"][0]["text"] and
          c["usage"]["completion_tokens"] == t["usage"]["completion_tokens"],
          "continue_final_message: the answer goes on from the message's text (%r, %r)"
          % (c.get("choices", [{}])[0].get("message"), t.get("choices", [{}])[0].get("text")))


def prompts(port, qwenchat, model, ctx):
    text = "Hello <|im_start|>world\u00e9 \u4f60\u597d<think>"
    st, _, b = request(port, "POST", "/tokenize", {"model": "m", "prompt": text,
                                                   "add_special_tokens": True})
    want = encode(qwenchat, model, text)
    check(st == 200 and b == {"count": len(want), "max_model_len": ctx, "tokens": want,
                              "token_strs": None},
          "/tokenize of a prompt: its tokens, special ones recognised, and the context (%s)" % b)
    # return_token_strs: each token as tokenizer.json spells it
    tj = json.load(open(os.path.join(model, "tokenizer.json"), encoding="utf-8"))
    spelled = {i: s for s, i in tj["model"]["vocab"].items()}
    spelled.update({a["id"]: a["content"] for a in tj["added_tokens"]})
    st, _, b = request(port, "POST", "/tokenize", {"prompt": text, "return_token_strs": True})
    check(st == 200 and b.get("tokens") == want and
          b.get("token_strs") == [spelled[i] for i in want],
          "return_token_strs: tokenizer.json's spelling of each token (%s)" % b.get("token_strs"))
    rnd = random.Random(3)  # a text of 2,000 tokens from all over the vocabulary
    st, _, d = request(port, "POST", "/detokenize",
                       {"tokens": [rnd.randrange(151643) for _ in range(2000)]})
    st2, _, b = request(port, "POST", "/tokenize", {"prompt": d.get("prompt", ""),
                                                    "return_token_strs": True})
    ids = b.get("tokens", [])
    check(st == st2 == 200 and len(ids) > 1000 and
          b.get("token_strs") == [spelled[i] for i in ids],
          "return_token_strs: the spelling of %d tokens of a random text" % len(ids))
    st, _, b = request(port, "POST", "/tokenize", {"prompt": ""})
    check(st == 200 and b.get("count") == 0 and b.get("tokens") == [],
          "/tokenize of an empty prompt: no tokens")
    st, _, b = request(port, "POST", "/detokenize", {"model": "m", "tokens": want})
    check(st == 200 and b == {"prompt": text}, "/detokenize gives the text back (%s)" % b)
    st, _, b = request(port, "POST", "/detokenize", {"tokens": []})
    check(st == 200 and b == {"prompt": ""}, "/detokenize of no tokens: an empty text")
    ids = encode(qwenchat, model, "\U0001d518")  # two tokens, the first ends mid-character
    st, _, b = request(port, "POST", "/detokenize", {"tokens": ids[:1] + [9707]})
    check(len(ids) > 1 and st == 200 and b.get("prompt") == "\ufffdHello",
          "/detokenize of ids that end inside a character: U+FFFD there (%s, %s)" % (ids, b))


def errors(port, key_port, key):
    cases = [
        ("/detokenize", {"tokens": [9707, 151936]}, "tokens[1]"),  # the vocabulary size
        ("/detokenize", {"tokens": [9707, -1]}, "tokens[1]"),
        ("/detokenize", {"tokens": [9707, 2 ** 40]}, "tokens[1]"),
        ("/detokenize", {"tokens": [9707, "a"]}, "tokens[1]"),
        ("/detokenize", {"tokens": "9707"}, "tokens"),
        ("/detokenize", {}, "tokens"),
        ("/tokenize", {}, "prompt"),
        ("/tokenize", {"prompt": 5}, "prompt"),
        ("/tokenize", {"prompt": "a", "messages": [{"role": "user", "content": "b"}]}, None),
        ("/tokenize", {"messages": []}, "messages"),
        ("/tokenize", {"messages": [{"role": "bogus", "content": "b"}]}, "messages[0].role"),
        ("/tokenize", {"prompt": "a", "add_generation_prompt": 1}, "add_generation_prompt"),
        ("/tokenize", {"messages": [{"role": "assistant", "content": "b"}],
                       "continue_final_message": True, "add_generation_prompt": True},
         "continue_final_message"),
        ("/tokenize", {"prompt": "a", "return_token_strs": "yes"}, "return_token_strs"),
        ("/tokenize", {"model": 3, "prompt": "a"}, "model"),
        ("/tokenize", "[1, 2", None),
    ]
    bad = []
    for path, body, param in cases:
        st, _, b = request(port, "POST", path, body)
        e = b.get("error", {}) if isinstance(b, dict) else {}
        if st != 400 or e.get("param") != param or not e.get("message"):
            bad.append((path, body, st, b))
    check(not bad, "%d bad /tokenize and /detokenize bodies: 400 naming the field%s"
          % (len(cases), " (wrong: %s)" % bad[:3] if bad else ""))
    st, _, b = request(port, "GET", "/tokenize")
    check(st == 405, "GET /tokenize: 405 (%d)" % st)
    st, _, _ = request(key_port, "POST", "/tokenize", {"prompt": "a"})
    st2, _, b = request(key_port, "POST", "/tokenize", {"prompt": "a"},
                        {"Authorization": "Bearer " + key})
    check(st == 401 and st2 == 200 and b.get("count") == 1,
          "/tokenize wants the API key where the server has one (%d, then %d)" % (st, st2))


def beside_completion(port, qwenchat, model, ctx):
    """A stream of ctx - 8 tokens runs; once its first event is in, /tokenize and
    /detokenize are sent. Events arriving after their answers show the completion was
    still being generated when they were answered."""
    import http.client
    arrivals = []

    def stream():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        c.request("POST", "/v1/completions", json.dumps(
            {"prompt": "Once upon a time", "max_tokens": ctx - 8, "stream": True,
             "temperature": 0}), {"Content-Type": "application/json"})
        r = c.getresponse()
        for line in r:
            if line.startswith(b"data: "):
                arrivals.append((time.monotonic(), line))
        c.close()

    t = threading.Thread(target=stream)
    t.start()
    while not arrivals and t.is_alive():
        time.sleep(0.001)
    text = "Hello world"
    st, _, b = request(port, "POST", "/tokenize", {"prompt": text})
    st2, _, d = request(port, "POST", "/detokenize", {"tokens": b.get("tokens", [])})
    answered = time.monotonic()
    t.join()
    later = sum(1 for when, _ in arrivals if when > answered)
    done = arrivals and arrivals[-1][1].strip() == b"data: [DONE]"
    check(st == st2 == 200 and b.get("tokens") == encode(qwenchat, model, text) and
          d.get("prompt") == text and done and later > 10,
          "/tokenize and /detokenize answered while a completion ran: %d of its %d events "
          "came after them" % (later, len(arrivals)))


if __name__ == "__main__":
    port, qwenchat, model, golden, ctx, key_port, key = sys.argv[1:8]
    conversations(int(port), qwenchat, model, golden)
    continue_spaces(int(port), qwenchat, model)
    tools_as_vllm(int(port), qwenchat, model)
    prompts(int(port), qwenchat, model, int(ctx))
    errors(int(port), int(key_port), key)
    beside_completion(int(port), qwenchat, model, int(ctx))
    sys.exit(1 if sc.failures else 0)
