#!/usr/bin/env python3
"""make-template-golden.py — golden chat-template renders made with jinja2, the way
Hugging Face transformers renders chat templates (apply_chat_template, tokenize=False).

Usage: python3 tests/golden/make-template-golden.py TOKENIZER_DIR
  (TOKENIZER_DIR from tests/fetch-tokenizer.sh: the real Qwen3 tokenizer_config.json,
  whose chat_template is the hybrid Qwen3 one.)

Inputs (tests/golden/):
  template-cases.json                  the conversations
  template-qwen3-instruct-2507.jinja   chat_template of Qwen/Qwen3-*-Instruct-2507
  template-qwen3-thinking-2507.jinja   chat_template of Qwen/Qwen3-*-Thinking-2507
  template-chatml.jinja                a plain ChatML template (an unknown template)
Outputs (tests/golden/):
  template-config-VARIANT.json  tokenizer_config.json with that variant's chat_template
  template-golden-VARIANT.json  {"how", "renders": [{case, add_generation_prompt,
                                 enable_thinking (null = not passed), text}]}

The environment copies transformers' _compile_jinja_template: ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and the loopcontrols extension, a raise_exception global,
and tojson as json.dumps(ensure_ascii=False). Render arguments: messages, tools (the case's, else None),
documents=None, add_generation_prompt, the special tokens, and enable_thinking only when
it is given (as apply_chat_template's **kwargs).
"""
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def compile_template(text):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(text)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(os.path.join(sys.argv[1], "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with open(os.path.join(HERE, "template-cases.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]

    def read(name):
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            return f.read()

    variants = {
        "qwen3": config["chat_template"],
        "qwen3-instruct-2507": read("template-qwen3-instruct-2507.jinja"),
        "qwen3-thinking-2507": read("template-qwen3-thinking-2507.jinja"),
        "chatml": read("template-chatml.jinja"),
    }
    special = {k: config.get(k) for k in ("bos_token", "eos_token", "pad_token", "unk_token")}
    for name, text in variants.items():
        template = compile_template(text)
        renders = []
        for i, case in enumerate(cases):
            for agp in (False, True):
                for think in (None, False, True):
                    kwargs = dict(special)
                    if think is not None:
                        kwargs["enable_thinking"] = think
                    out = template.render(messages=case["messages"], tools=case.get("tools"),
                                          documents=None, add_generation_prompt=agp,
                                          **kwargs)
                    renders.append({"case": i, "add_generation_prompt": agp,
                                    "enable_thinking": think, "text": out})
        golden = {
            "how": "Made by tests/golden/make-template-golden.py: jinja2 %s with Hugging Face's "
                   "chat-template settings, rendering the %s chat_template over "
                   "tests/golden/template-cases.json for add_generation_prompt false/true and "
                   "enable_thinking absent/false/true." % (jinja2.__version__, name),
            "renders": renders,
        }
        with open(os.path.join(HERE, "template-golden-%s.json" % name), "w",
                  encoding="utf-8") as f:
            json.dump(golden, f, ensure_ascii=False, indent=0)
            f.write("\n")
        cfg = dict(config)
        cfg["chat_template"] = text
        with open(os.path.join(HERE, "template-config-%s.json" % name), "w",
                  encoding="utf-8") as f:
            json.dump(cfg, f, ensure_ascii=False, indent=2)
            f.write("\n")
        print("%s: %d renders" % (name, len(renders)))


if __name__ == "__main__":
    main()
