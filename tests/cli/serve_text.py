#!/usr/bin/env python3
"""serve_text.py -- `qwenchat serve`'s /v1/completions from the outside, against the
float64 Qwen3 of ppl_reference.py (tests/cli/serve.sh runs it).

usage: serve_text.py PORT MODEL_DIR CTX

PORT is a server started with --exact --kv-f32 --ctx CTX on MODEL_DIR (a random-weight model
with the real Qwen3 tokenizer). Checked:
  - the request lm-evaluation-harness makes for a log-likelihood (prompts as arrays of
    token ids, echo, logprobs 1, max_tokens 1, temperature 0): each prompt token's
    log-probability and its most likely alternative equal the reference's within 1e-4,
    a prompt longer than one scoring forward included; the continuation's sum and
    is_greedy as lm-eval computes them from the answer; prompts sharing a context get
    the same bits as each alone (the shared positions' scores are reused);
  - max_tokens 0 with echo scores the prompt alone; the streamed answer carries the
    same text and log-probabilities as the whole one;
  - a text prompt is tokenized with its special tokens, echoed as given, its tokens
    spelling it at their text_offsets; ids that cut a character echo U+FFFD;
  - a generated token is scored as the prompt's are (the whole vocabulary), in a chat
    too, whatever the temperature and penalties (vLLM's raw_logprobs);
  - repetition_penalty looks at the whole context, prompt and answer (vLLM's and
    transformers' rule), or at the last repeat_last_n tokens (llama-server's field):
    greedy answers equal the reference's with each rule;
  - vLLM's prompt_logprobs: each prompt token's log-probability, rank and text, and
    the likeliest there, in each choice of a text completion and in a chat response;
  - return_tokens_as_token_ids: logprobs tokens as "token_id:ID"; truncate_prompt_tokens;
  - stop_reason: the stop string or stop id that ended an answer, null for the
    tokenizer's eos and the length, in whole answers and in the chunks vLLM puts it in;
  - the context: a prompt that does not fit, or leaves no room for max_tokens, is a
    400 context_length_exceeded; the default max_tokens is held to the room left;
  - bad requests: a clean 400 naming the field.
Prints one "ok: ..." or "FAIL: ..." line per check; exits 1 when any failed.
"""
import json
import os
import random
import re
import sys

import jsonschema
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ppl_reference as pr  # noqa: E402
import serve_client as sc  # noqa: E402

check, request = sc.check, sc.request


def reference(cfg, w, ids):
    """(log-probability of each token given those before it, from the second on;
    the most likely log-probability after each position) in float64."""
    lp = pr.log_softmax(pr.forward(cfg, w, ids))
    return [float(lp[i - 1][ids[i]]) for i in range(1, len(ids))], lp.max(axis=-1)


def post(port, body):
    return request(port, "POST", "/v1/completions", body)


def loglikelihood(port, cfg, w, ctx):
    """lm-eval's local-completions request: a context and three continuations."""
    rnd = random.Random(7)
    context = [rnd.randrange(150000) for _ in range(150)]  # two scoring forwards
    conts = [[rnd.randrange(150000) for _ in range(k)] for k in (1, 3, 4)]
    prompts = [context + c for c in conts]
    st, _, b = post(port, {"model": "m", "prompt": prompts, "max_tokens": 1, "logprobs": 1,
                           "echo": True, "temperature": 0, "seed": 1234})
    check(st == 200 and b.get("object") == "text_completion" and len(b["choices"]) == 3,
          "lm-eval's log-likelihood request: 200, a text_completion with 3 choices (%d)" % st)
    if st != 200:
        return
    worst = 0.0
    for choice, ids in zip(sorted(b["choices"], key=lambda c: c["index"]), prompts):
        lps, best = reference(cfg, w, ids)
        got = choice["logprobs"]
        ok = (got["token_logprobs"][0] is None and got["top_logprobs"][0] is None
              and len(got["token_logprobs"]) == len(ids) + 1)
        check(ok, "prompt %d: the first token has no log-probability, one entry per token "
              "and the generated one" % choice["index"])
        for i in range(1, len(ids)):
            worst = max(worst, abs(got["token_logprobs"][i] - lps[i - 1]),
                        abs(max(got["top_logprobs"][i].values()) - best[i - 1]))
        ctxlen = len(context)
        # lm-eval: sum(token_logprobs[ctxlen:-1]), greedy if each is its top's max
        total = sum(got["token_logprobs"][ctxlen:-1])
        greedy = all(t == max(top.values()) for t, top in
                     zip(got["token_logprobs"][ctxlen:-1], got["top_logprobs"][ctxlen:-1]))
        want = sum(lps[ctxlen - 1:])
        want_greedy = all(abs(lps[i - 1] - best[i - 1]) < 1e-12 for i in range(ctxlen, len(ids)))
        check(abs(total - want) < 1e-4 * len(conts) and greedy == want_greedy,
              "prompt %d: the continuation's log-likelihood %.6f (reference %.6f), is_greedy "
              "%s" % (choice["index"], total, want, greedy))
        check(choice["text"].startswith("".join(got["tokens"][:len(ids)])),
              "prompt %d: the echoed text is its tokens'" % choice["index"])
    check(worst < 1e-4, "every prompt token's log-probability and best alternative within "
          "1e-4 of the float64 reference (worst %.2e)" % worst)
    # the batch's later prompts reused the scores of the context they share with the
    # first; alone, after another prompt, each is computed whole: the same bits
    same = True
    for choice, ids in zip(sorted(b["choices"], key=lambda c: c["index"]), prompts):
        post(port, {"prompt": [[5, 6, 7, 8, 9, 10, 11, 12]], "max_tokens": 0, "echo": True,
                    "logprobs": 1})
        st2, _, alone = post(port, {"prompt": ids, "max_tokens": 1, "logprobs": 1, "echo": True,
                                    "temperature": 0})
        same = same and st2 == 200 and alone["choices"][0]["logprobs"] == choice["logprobs"]
    check(same, "prompts that share a context: the shared positions' scores reused, the same "
          "bits as each prompt computed alone")
    n = sum(len(p) for p in prompts)
    check(b["usage"]["prompt_tokens"] == n and b["usage"]["completion_tokens"] <= 3,
          "usage counts the prompts' tokens (%s)" % b["usage"])


def stream(port, body):
    """The events of a streamed request: (chunks, saw [DONE])."""
    c = sc.http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/completions", body=json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    events = [e[6:] for e in data.split("\n\n") if e.startswith("data: ")]
    done = bool(events) and events[-1] == "[DONE]"
    return [json.loads(e) for e in events if e != "[DONE]"], done


def echo_and_stream(port, cfg, w):
    ids = [9707, 11, 1879, 0, 151643, 8, 42]
    st, _, b = post(port, {"prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 0})
    c = b["choices"][0] if st == 200 else {}
    lps, _ = reference(cfg, w, ids)
    ok = st == 200 and c["finish_reason"] == "length" and b["usage"]["completion_tokens"] == 0
    ok = ok and len(c["logprobs"]["tokens"]) == len(ids)
    ok = ok and max(abs(a - r) for a, r in zip(c["logprobs"]["token_logprobs"][1:], lps)) < 1e-4
    ok = ok and all(len(t) == 1 for t in c["logprobs"]["top_logprobs"][1:])
    check(ok, "max_tokens 0 with echo: the prompt scored alone, logprobs 0 lists each token "
          "by itself")
    check(st == 200 and "<|endoftext|>" in c["text"], "token ids are echoed with their special "
          "tokens")
    body = {"prompt": ["Hello there", "The cat sat"], "max_tokens": 6, "echo": True,
            "logprobs": 3, "temperature": 1, "seed": 11, "stop": ["zz"]}
    st, _, whole = post(port, body)
    chunks, done = stream(port, dict(body, stream_options={"include_usage": True}))
    for i in range(2):
        parts = [ch["choices"][0] for ch in chunks if ch["choices"] and
                 ch["choices"][0]["index"] == i]
        text = "".join(p["text"] for p in parts)
        lists = {k: sum((p["logprobs"][k] for p in parts), []) for k in
                 ("tokens", "token_logprobs", "top_logprobs", "text_offset")}
        want = whole["choices"][i]
        check(text == want["text"] and lists == want["logprobs"] and
              parts[-1]["finish_reason"] == want["finish_reason"],
              "prompt %d streamed: the same text, logprobs and finish_reason as whole" % i)
    check(done and chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"],
          "the stream ends with the usage and [DONE]")
    # vLLM's continuous_usage_stats: each chunk carries its choice's usage so far
    plain = dict(body, echo=False)
    chunks, done = stream(port, dict(plain, stream_options={"include_usage": True,
                                                            "continuous_usage_stats": True}))
    firsts, lasts, rising = {}, {}, True
    for ch in chunks[:-1]:
        i, u = ch["choices"][0]["index"], ch["usage"]
        rising &= u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and \
            u["completion_tokens"] >= lasts.get(i, {"completion_tokens": 0})["completion_tokens"]
        firsts.setdefault(i, u)
        lasts[i] = u
    made = [len(sum((ch["choices"][0]["logprobs"]["tokens"] for ch in chunks[:-1]
                     if ch["choices"][0]["index"] == i), [])) for i in range(2)]
    total = post(port, plain)[2]["usage"]
    check(done and rising and sorted(lasts) == [0, 1] and
          [lasts[i]["completion_tokens"] for i in range(2)] == made and
          lasts[0]["prompt_tokens"] + lasts[1]["prompt_tokens"] == total["prompt_tokens"] and
          chunks[-1]["usage"] == total,
          "continuous_usage_stats: every chunk has its choice's usage so far, the last its "
          "tokens (%s, %s)" % (made, [lasts.get(i) for i in range(2)]))
    alone = post(port, dict(body, prompt="The cat sat"))[2]
    check(alone["choices"][0]["text"] == whole["choices"][1]["text"],
          "a prompt in a batch gets the answer it gets alone (the seed per prompt)")


def tokenizer_size(model):
    """The ids the tokenizer knows (the embedding's padding rows past them it does not)."""
    t = json.load(open(os.path.join(model, "tokenizer.json")))
    ids = list(t["model"]["vocab"].values()) + [a["id"] for a in t.get("added_tokens", [])]
    return max(ids) + 1


def generated(port, cfg, w, model):
    """The generated token is scored as the prompt's are: the model's distribution over
    the whole vocabulary (the draw never picks a padding id)."""
    ids = [9707, 1879, 525, 77]
    st, _, b = post(port, {"prompt": ids, "max_tokens": 1, "echo": True, "logprobs": 2,
                           "temperature": 0})
    lp = pr.log_softmax(pr.forward(cfg, w, ids))[-1]
    want = float(lp[:tokenizer_size(model)].max())
    got = b["choices"][0]["logprobs"]["token_logprobs"][-1] if st == 200 else None
    check(got is not None and abs(got - want) < 1e-4,
          "the generated token's log-probability is the reference's over the whole "
          "vocabulary (%s, reference %.6f)" % (got, want))
    # a character cut between ids: U+FFFD, as Hugging Face decodes it
    st, _, b = post(port, {"prompt": [124026, 1273], "max_tokens": 0, "echo": True,
                           "logprobs": 1})
    c = b["choices"][0] if st == 200 else {}
    ok = st == 200 and c["text"].startswith("\ufffd") and "\\x" not in c["text"]
    ok = ok and "".join(c["logprobs"]["tokens"]) == c["text"]
    ok = ok and c["logprobs"]["text_offset"] == [0, 1]
    check(ok, "ids that cut a character echo U+FFFD, tokens and offsets alike (%r)"
          % c.get("text"))


def chat(port, body, stream=False):
    """A chat completion: (status, body), or the chunks of a stream."""
    if not stream:
        st, _, b = request(port, "POST", "/v1/chat/completions", body)
        return st, b
    c = sc.http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/chat/completions", body=json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json"})
    data = c.getresponse().read().decode()
    c.close()
    return [json.loads(e[6:]) for e in data.split("\n\n")
            if e.startswith("data: ") and e != "data: [DONE]"]


def chat_logprobs(port, cfg, w):
    """A chat answer's tokens are scored by the model's own distribution, as vLLM's
    default raw_logprobs: not the temperature's nor the penalties' (the second token
    comes after the first, which the penalties would lower)."""
    conv = [{"role": "user", "content": "Name three colours"}]
    st, _, t = request(port, "POST", "/tokenize", {"messages": conv})
    ids = t["tokens"] if st == 200 else []
    body = {"messages": conv, "max_tokens": 2, "logprobs": True, "top_logprobs": 5,
            "temperature": 0.5, "top_k": 5, "presence_penalty": 2, "frequency_penalty": 2,
            "seed": 3}
    st, b = chat(port, body)
    entries = b["choices"][0]["logprobs"]["content"] if st == 200 else []
    worst, ok = 0.0, st == 200 and len(entries) == 2 and len(ids) > 5
    for e in entries if ok else []:
        lp = pr.log_softmax(pr.forward(cfg, w, ids))[-1]
        top = sorted(range(len(lp)), key=lambda i: -lp[i])[:5]
        # the answer drew one of the 5 likeliest (top_k): that id is the one whose
        # log-probability the server gave
        pick = min(top, key=lambda i: abs(lp[i] - e["logprob"]))
        worst = max([worst, abs(lp[pick] - e["logprob"])] +
                    [abs(lp[i] - x["logprob"]) for i, x in zip(top, e["top_logprobs"])])
        ids = ids + [pick]
    check(ok and worst < 1e-4, "a chat answer's logprobs are the model's own at temperature "
          "0.5 with penalties 2 (max |diff| %.2g to the reference)" % worst)


def greedy(cfg, w, prompt, n, rp, window, vocab):
    """The reference's greedy answer to prompt with transformers' repetition penalty on
    the context's tokens (its last `window`, or all with -1), drawn from the tokenizer's
    ids, ended by an end-of-turn id. Only the last position's logits are made."""
    cfg2 = dict(cfg, tie_word_embeddings=False)
    w2 = dict(w, **{"lm_head.weight": np.eye(cfg["hidden_size"])})
    head = w.get("lm_head.weight")
    if cfg.get("tie_word_embeddings") or head is None:
        head = w["model.embed_tokens.weight"]
    ids = list(prompt)
    for _ in range(n):
        z = (pr.forward(cfg2, w2, ids)[-1] @ head.T)[:vocab]
        for t in set(ids if window < 0 else ids[-window:]):
            z[t] = z[t] / rp if z[t] > 0 else z[t] * rp
        ids.append(int(np.argmax(z)))
        if ids[-1] in (151643, 151645):
            break
    return ids[len(prompt):]


def repetition(port, cfg, w, model):
    """A prompt whose early tokens the whole-context rule penalises and the last-64 rule
    does not: the server's answers follow each rule."""
    rnd, vocab = random.Random(5), tokenizer_size(model)
    for _ in range(12):
        # the tokens an answer to the tail would begin with, more than 64 tokens back
        tail = [rnd.randrange(100, 150000) for _ in range(70)]
        prompt = greedy(cfg, w, tail, 12, 3.0, 64, vocab) + tail
        want = {k: greedy(cfg, w, prompt, 12, 3.0, k, vocab) for k in (-1, 64)}
        if want[-1] != want[64]:
            break
    got = {}
    for k in (-1, 64):
        body = {"prompt": prompt, "max_tokens": 12, "temperature": 0, "repetition_penalty": 3}
        st, _, b = post(port, dict(body, repeat_last_n=k) if k != -1 else body)
        st2, _, t = request(port, "POST", "/detokenize",
                            {"tokens": [i for i in want[k] if i < 151643]})
        got[k] = st == 200 and st2 == 200 and b["choices"][0]["text"] == t["prompt"] and \
            b["usage"]["completion_tokens"] == len(want[k])
    check(want[-1] != want[64] and got[-1] and got[64],
          "repetition_penalty 3, greedy: the whole context by default, the last 64 with "
          "repeat_last_n 64, as the reference (%s)" % got)


def token_texts(model):
    """Each id's text as Hugging Face decodes it alone (vLLM's decoded_token): the
    byte-level spelling's bytes, U+FFFD for those that are not UTF-8; an added token's
    content."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) +
            list(range(0xAE, 0xFF + 1)))
    others = [b for b in range(256) if b not in keep]
    byte_of = {chr(b): b for b in keep}
    byte_of.update({chr(256 + i): b for i, b in enumerate(others)})
    t = json.load(open(os.path.join(model, "tokenizer.json"), encoding="utf-8"))
    out = {i: bytes(byte_of[c] for c in s).decode("utf-8", "replace")
           for s, i in t["model"]["vocab"].items()}
    out.update({a["id"]: a["content"] for a in t["added_tokens"]})
    return out


def prompt_scores(lists, ids, lp, names, top):
    """The worst |logprob - reference| of prompt_logprobs lists, each for ids under
    lp (the reference's log-softmax rows), or None when one is not vLLM's shape: the
    first token null; then the token's own entry first, its rank that of the
    reference (up to ties within float32's rounding), the top ones' ranks 1..top and
    values the reference's likeliest, every decoded_token the token's own text."""
    worst = 0.0
    for pl in lists:
        if len(pl) != len(ids) or pl[0] is not None:
            return None
        for i in range(1, len(ids)):
            row, d, v = lp[i - 1], pl[i], lp[i - 1][ids[i]]
            own, want = d.get(str(ids[i])), np.sort(row)[::-1][:top]
            lo, hi = int((row > v + 1e-5).sum()) + 1, int((row >= v - 1e-5).sum())
            among = own is not None and own["rank"] <= top  # one of the likeliest too
            ranks = sorted(e["rank"] for k, e in d.items() if among or k != str(ids[i]))
            if list(d)[0] != str(ids[i]) or not (among or lo <= own["rank"] <= hi) or \
                    ranks != list(range(1, top + 1)) or \
                    any(names.get(int(k)) != e["decoded_token"] for k, e in d.items()):
                return None
            tops = sorted((e["logprob"] for e in d.values() if e["rank"] <= top), reverse=True)
            worst = max([worst, abs(own["logprob"] - v)] +
                        [abs(a - b) for a, b in zip(tops, want)])
    return worst


def prompt_logprobs(port, cfg, w, model):
    names, rnd = token_texts(model), random.Random(9)
    ids = [rnd.randrange(150000) for _ in range(40)]
    # scored first without ranks (lm-eval's request): those kept scores are not reused
    post(port, {"prompt": ids, "max_tokens": 0, "echo": True, "logprobs": 1})
    st, _, b = post(port, {"prompt": ids, "max_tokens": 1, "prompt_logprobs": 3, "n": 2,
                           "temperature": 0})
    lp = pr.log_softmax(pr.forward(cfg, w, ids))
    worst = prompt_scores([c.get("prompt_logprobs") for c in b["choices"]], ids, lp, names,
                          3) if st == 200 and len(b["choices"]) == 2 else None
    check(worst is not None and worst < 1e-4,
          "prompt_logprobs 3 of a text completion, in each of its 2 choices: vLLM's shape, "
          "each token's logprob, rank and text, and the likeliest 3, as the reference's "
          "(max |diff| %s)" % worst)
    conv = [{"role": "user", "content": "Say h\u00e9llo"}]
    st, _, t = request(port, "POST", "/tokenize", {"messages": conv})
    st2, c = chat(port, {"messages": conv, "max_tokens": 1, "prompt_logprobs": 0})
    ids = t.get("tokens", []) if st == 200 else []
    lp = pr.log_softmax(pr.forward(cfg, w, ids)) if ids else None
    worst = prompt_scores([c.get("prompt_logprobs")], ids, lp, names, 0) \
        if st2 == 200 and ids else None
    check(worst is not None and worst < 1e-4 and "prompt_logprobs" not in c["choices"][0],
          "a chat's prompt_logprobs 0: the rendered prompt's tokens scored in the response "
          "(max |diff| %s)" % worst)


def token_ids(port):
    """vLLM's return_tokens_as_token_ids: logprobs name tokens "token_id:ID", the echo's
    too, and the ids are the ones that spell the text."""
    ids = [9707, 1879, 0]
    st, _, b = post(port, {"prompt": ids, "max_tokens": 3, "echo": True, "logprobs": 2,
                           "return_tokens_as_token_ids": True, "temperature": 0})
    c = b["choices"][0] if st == 200 else {}
    toks = c.get("logprobs", {}).get("tokens", [])
    made = [int(t[9:]) for t in toks if t.startswith("token_id:")]
    st2, _, t = request(port, "POST", "/detokenize", {"tokens": made})
    ok = st == 200 and len(made) == len(toks) == 3 + b["usage"]["completion_tokens"]
    ok = ok and made[:3] == ids and st2 == 200 and t["prompt"] == c["text"]
    ok = ok and all(k.startswith("token_id:") for d in c["logprobs"]["top_logprobs"][1:] for k in d)
    st, ch = chat(port, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
                         "logprobs": True, "top_logprobs": 2, "return_tokens_as_token_ids": True})
    content = ch["choices"][0]["logprobs"]["content"] if st == 200 else []
    made = [int(e["token"][9:]) for e in content if e["token"].startswith("token_id:")]
    st2, _, t = request(port, "POST", "/detokenize", {"tokens": made})
    ok = ok and len(made) == len(content) > 0 and st2 == 200 and \
        t["prompt"] == ch["choices"][0]["message"]["content"] and \
        all(bytes(e["bytes"]) == e["token"].encode() for e in content)
    check(ok, "return_tokens_as_token_ids: every logprobs token is \"token_id:ID\", the echo's "
          "too, and the ids spell the text (%s)" % toks)


def truncation(port, ctx):
    """vLLM's truncate_prompt_tokens: a prompt's last N tokens only (-1: the context's
    worth); more than the context is refused."""
    ids = [100 + i for i in range(20)]
    st, _, b = post(port, {"prompt": ids, "max_tokens": 0, "echo": True,
                           "truncate_prompt_tokens": 5})
    st2, _, t = request(port, "POST", "/detokenize", {"tokens": ids[-5:]})
    ok = st == 200 and b["usage"]["prompt_tokens"] == 5 and b["choices"][0]["text"] == t["prompt"]
    st, _, b = post(port, {"prompt": list(range(100, 100 + ctx + 40)), "max_tokens": 0,
                           "truncate_prompt_tokens": -1})
    ok = ok and st == 200 and b["usage"]["prompt_tokens"] == ctx
    st, c = chat(port, {"messages": [{"role": "user", "content": "hello there"}],
                        "max_tokens": 1, "truncate_prompt_tokens": 3})
    ok = ok and st == 200 and c["usage"]["prompt_tokens"] == 3
    st, _, b = post(port, {"prompt": ids, "truncate_prompt_tokens": ctx + 1})
    ok = ok and st == 400 and b["error"]["param"] == "truncate_prompt_tokens"
    check(ok, "truncate_prompt_tokens: the last 5 tokens echoed, -1 the context's %d, a chat's "
          "3, more than the context refused" % ctx)


def stop_reasons(port):
    """vLLM's stop_reason: the stop string or stop id that ended the answer; null for
    the tokenizer's eos (<|im_end|>) and the length. The other eos id of
    generation_config.json (<|endoftext|>) is a stop id, as vLLM adds it."""
    a, eot, im_end = 64, 151643, 151645  # "a"
    hold = {"allowed_token_ids": [a, eot, im_end], "max_tokens": 4}
    cases = [
        ({"stop": ["a"], "logit_bias": {str(a): 50}}, "a"),
        ({"stop_token_ids": [a], "logit_bias": {str(a): 50}}, a),
        ({"logit_bias": {str(eot): 50}}, eot),
        ({"logit_bias": {str(im_end): 50}}, None),
        ({"logit_bias": {str(a): 50}}, None),  # the length
    ]
    for extra, want in cases:
        st, _, t = post(port, dict(hold, prompt="x", **extra))
        st2, c = chat(port, dict(hold, messages=[{"role": "user", "content": "x"}], **extra))
        got = [t["choices"][0].get("stop_reason", "absent") if st == 200 else st,
               c["choices"][0].get("stop_reason", "absent") if st2 == 200 else st2]
        check(got == [want, want], "stop_reason %r for %s (text, chat: %r)"
              % (want, json.dumps(extra), got))
    extra = {"stop_token_ids": [a], "logit_bias": {str(a): 50}}
    chunks, _ = stream(port, dict(hold, prompt="x", **extra))
    reasons = [ch["choices"][0].get("stop_reason", "absent") for ch in chunks]
    check(reasons and reasons[-1] == a and set(reasons[:-1]) <= {None},
          "a text stream: every chunk has stop_reason, the last the stop id (%r)" % reasons)
    chunks = chat(port, dict(hold, messages=[{"role": "user", "content": "x"}], **extra),
                  stream=True)
    reasons = [ch["choices"][0].get("stop_reason", "absent") for ch in chunks]
    check(reasons and reasons[-1] == a and set(reasons[:-1]) == {"absent"},
          "a chat stream: the chunk with the finish_reason has the stop_reason (%r)" % reasons)


def text_prompt(port):
    text = "<|im_start|>user\nSay héllo<|im_end|>"
    st, _, b = post(port, {"prompt": text, "max_tokens": 0, "echo": True, "logprobs": 1})
    lp = b["choices"][0]["logprobs"] if st == 200 else {}
    ok = st == 200 and b["choices"][0]["text"] == text and lp["tokens"][0] == "<|im_start|>"
    ok = ok and lp["tokens"][-1] == "<|im_end|>" and "".join(lp["tokens"]) == text
    ok = ok and all(text[o:].startswith(t) for o, t in zip(lp["text_offset"], lp["tokens"]))
    check(ok, "a text prompt: special tokens recognised, echoed as given, each token at its "
          "text_offset (%d)" % st)


def context(port, ctx):
    ids = [100 + i for i in range(ctx)]
    st, _, b = post(port, {"prompt": ids + [5]})
    check(st == 400 and b["error"]["code"] == "context_length_exceeded",
          "a prompt over the context: 400 context_length_exceeded (%d)" % st)
    st, _, b = post(port, {"prompt": ids, "max_tokens": 1})
    check(st == 400 and b["error"]["param"] == "max_tokens",
          "a prompt that leaves no room for max_tokens: 400 on max_tokens (%d)" % st)
    st, _, b = post(port, {"prompt": ids, "max_tokens": 0, "echo": True})
    check(st == 200 and b["choices"][0]["text"] and b["usage"]["completion_tokens"] == 0,
          "... with max_tokens 0 and echo it is scored (%d)" % st)
    st, _, b = post(port, {"prompt": ids[:-3], "temperature": 0})
    check(st == 200 and b["usage"]["completion_tokens"] <= 3 and
          b["choices"][0]["finish_reason"] == "length",
          "the default max_tokens is held to the room left (%s)" % b.get("usage"))


def structured(port):
    """response_format and guided_json hold a text completion too, as vLLM's do."""
    schema = {"type": "object", "additionalProperties": False, "required": ["legs", "name"],
              "properties": {"legs": {"type": "integer", "minimum": 0, "maximum": 8},
                             "name": {"type": "string", "maxLength": 6}}}
    ended = 0
    for seed in range(6):
        way = ({"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "cat", "schema": schema}}}
               if seed % 2 else {"guided_json": schema})
        st, _, b = post(port, {"prompt": ["A cat:", "Another:"], "max_tokens": 80,
                               "temperature": 1, "seed": seed, **way})
        check(st == 200, "a structured text completion: 200 (%d)" % st)
        for c in b.get("choices", []):
            if c["finish_reason"] != "stop":
                continue
            try:
                jsonschema.validate(json.loads(c["text"]), schema)
                ended += 1
            except (ValueError, jsonschema.ValidationError) as e:
                check(False, "a structured text completion: %r is no value of the schema: %s"
                      % (c["text"][:80], str(e).splitlines()[0]))
    check(ended >= 1, "structured text completions: %d ended, each a value of the schema" % ended)
    # vLLM's guided_choice and structured_outputs.choice: one of the texts exactly
    choices = ["yes", "yes!", "no", 'say "hi"\\', "\n", "d\u00e9j\u00e0 vu"]
    got = set()
    for way in ({"guided_choice": choices}, {"structured_outputs": {"choice": choices}}):
        st, _, b = post(port, {"prompt": ["Well?", "Hm"], "max_tokens": 30, "temperature": 1.5,
                               "n": 8, "seed": 5, **way})
        texts = [(c["text"], c["finish_reason"]) for c in b.get("choices", [])]
        got |= {t for t, _ in texts}
        check(st == 200 and len(texts) == 16 and all(t in choices and f == "stop"
                                                     for t, f in texts),
              "%s: 16 answers at temperature 1.5, each one of the choices exactly (%s)"
              % (list(way)[0], sorted(set(texts))))
    # guided_regex and structured_outputs.regex: the whole text matches (re.fullmatch)
    pattern = r'^[0-9]{2,4}( (apples|"pears"\\?))?\.?$'
    for way in ({"guided_regex": pattern}, {"structured_outputs": {"regex": pattern}}):
        st, _, b = post(port, {"prompt": ["Count:", "N"], "max_tokens": 12, "temperature": 1.5,
                               "n": 8, "seed": 6, **way})
        texts = [(c["text"], c["finish_reason"]) for c in b.get("choices", [])]
        ended = [t for t, f in texts if f == "stop"]
        check(st == 200 and len(texts) == 16 and len(ended) >= 8 and
              all(re.fullmatch(pattern, t) for t in ended),
              "%s: of 16 answers at temperature 1.5, %d ended, each a match of the whole (%s)"
              % (list(way)[0], len(ended), sorted(set(ended))[:6]))
    conv = [{"role": "user", "content": "Yes or no?"}]
    answers = []
    for seed in range(4):
        st, c = chat(port, {"messages": conv, "max_tokens": 40, "temperature": 1, "seed": seed,
                            "guided_choice": ["yes", "no"]})
        m = c["choices"][0]["message"] if st == 200 else {}
        answers.append((m.get("content"), c["choices"][0]["finish_reason"] if st == 200 else st))
    check(all(a in (("yes", "stop"), ("no", "stop"), (None, "length")) for a in answers),
          "a chat's guided_choice holds the answer after its free reasoning (%s)" % answers)
    # thinking off: the prompt closed the think block, so the choice holds from the first
    # token (a <think> there took the answer out of it, as reasoning, 3 seeds in 12)
    answers = []
    for seed in range(12):
        st, c = chat(port, {"messages": conv, "max_tokens": 20, "temperature": 1, "seed": seed,
                            "guided_choice": ["yes", "no"],
                            "chat_template_kwargs": {"enable_thinking": False}})
        m = c["choices"][0]["message"] if st == 200 else {}
        answers.append((m.get("content"), "reasoning_content" in m))
    check(all(a in (("yes", False), ("no", False)) for a in answers),
          "thinking off: guided_choice holds the answer from its first token (%s)" % answers)


def refused(port):
    cases = [
        ({"prompt": ""}, "prompt"),
        ({"prompt": []}, "prompt"),
        ({"prompt": [[1, 2], "x"]}, "prompt[1]"),
        ({"prompt": [[1, "x"]]}, "prompt[0][1]"),
        ({"prompt": [1, -2]}, "prompt[1]"),
        ({"prompt": [1, 2 ** 40]}, "prompt[1]"),
        ({"prompt": [[1]] * 1025}, "prompt"),
        ({"prompt": [[151936]]}, "prompt[0][0]"),  # the vocabulary's size: named as below 0
        ({"prompt": [1, 151936]}, "prompt[1]"),
        ({"prompt": [[1], [2, 151936]]}, "prompt[1][1]"),
        ({"prompt": "x", "suffix": "y"}, "suffix"),
        ({"prompt": "x", "logprobs": 21}, "logprobs"),
        ({"prompt": "x", "max_tokens": -1}, "max_tokens"),
        ({"prompt": "x", "echo": 1}, "echo"),
        ({"prompt": "x", "best_of": 2}, "best_of"),
        ({"prompt": "x", "n": 129}, "n"),
        ({"messages": [{"role": "user", "content": "x"}]}, "prompt"),
        ({"prompt": "x", "include_stop_str_in_output": "yes"}, "include_stop_str_in_output"),
        ({"prompt": "x", "allowed_token_ids": []}, "allowed_token_ids"),
        ({"prompt": "x", "allowed_token_ids": [151936]}, "allowed_token_ids[0]"),
        ({"prompt": "x", "prompt_logprobs": 1, "stream": True}, "prompt_logprobs"),
        ({"prompt": "x", "prompt_logprobs": 21}, "prompt_logprobs"),
        ({"prompt": "x", "guided_choice": []}, "guided_choice"),
        ({"prompt": "x", "guided_choice": ["a", 1]}, "guided_choice[1]"),
        ({"prompt": "x", "guided_choice": ["a"], "guided_json": {}}, "guided_choice"),
        ({"prompt": "x", "structured_outputs": {"choice": ["a"], "json": {}}},
         "structured_outputs"),
        ({"prompt": "x", "structured_outputs": {"choice": "a"}}, "structured_outputs.choice"),
        ({"prompt": "x", "guided_regex": "a)(b"}, "guided_regex"),
        ({"prompt": "x", "guided_regex": ["a"]}, "guided_regex"),
        ({"prompt": "x", "structured_outputs": {"regex": "a", "choice": ["a"]}},
         "structured_outputs"),
        ({"prompt": list(range(100, 300)), "prompt_logprobs": 20, "max_tokens": 1, "n": 128},
         "prompt_logprobs"),
        # each alone within the bound, together past it
        ({"prompt": [list(range(100, 350))] * 40, "prompt_logprobs": 20, "max_tokens": 0,
          "echo": True, "logprobs": 20}, "logprobs"),
        ({"prompt": "x", "guided_json": {"type": "integer", "not": {"const": 1}}}, "guided_json"),
        ({"prompt": "x", "stream": True, "stream_options": {"continuous_usage_stats": 1}},
         "stream_options.continuous_usage_stats"),
        ({"prompt": "x", "stream_options": {"include_usage": False}}, "stream_options"),
        ({"prompt": "x", "skip_special_tokens": False}, "skip_special_tokens"),
    ]
    for body, param in cases:
        st, _, b = post(port, body)
        check(st == 400 and sc.is_error_object(b) and b["error"]["param"] == param,
              "%s: 400 on %s (%d %s)" % (json.dumps(body)[:60], param, st,
                                         b.get("error", {}).get("param") if isinstance(b, dict)
                                         else b))
    st, _, b = request(port, "POST", "/v1/chat/completions",
                       {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    check(st == 200 and b["object"] == "chat.completion", "a chat completion after them (%d)" % st)


def main():
    port, model, ctx = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    cfg, w = pr.load(model)
    loglikelihood(port, cfg, w, ctx)
    echo_and_stream(port, cfg, w)
    generated(port, cfg, w, model)
    chat_logprobs(port, cfg, w)
    repetition(port, cfg, w, model)
    prompt_logprobs(port, cfg, w, model)
    token_ids(port)
    truncation(port, ctx)
    stop_reasons(port)
    text_prompt(port)
    context(port, ctx)
    structured(port)
    refused(port)
    sys.exit(1 if sc.failures else 0)


if __name__ == "__main__":
    main()
