#!/usr/bin/python3
"""convgen.py — conversations for the --sft tests, of seeded random common words.

  convgen.py DIR [--seed N] [--cut]

writes DIR/corpus.txt (20,000 words, for train-bpe), DIR/conv.jsonl (nine
conversations: system prompts, one to three turns, reasoning_content, a tool call with
its tools; then one without an answer and one whose first answer ends past 200 words;
with --cut, one more whose second turn is long, which a short row cuts after its first
answer) and DIR/saved.json (a conversation as the chat saves it, its reasoning in
<think>). Other tests take say() and WORDS from here.
"""
import json
import random
import sys

WORDS = ("the of and to in is was he that it for his on with as at by had they be this "
         "from are have not or were she but we one which you her").split()


def sayer(seed):
    """say(n): n words drawn by a generator seeded with seed."""
    r = random.Random(seed)
    return lambda n: " ".join(r.choice(WORDS) for _ in range(n))


def mixed(say):
    convs = []
    for i in range(9):
        msgs = [{"role": "system", "content": say(4)}] if i % 3 == 0 else []
        for t in range(1 + i % 3):
            msgs.append({"role": "user", "content": say(3 + (i * 7 + t) % 9)})
            a = {"role": "assistant", "content": say(2 + (i + t) % 6)}
            if (i + t) % 2 == 0:
                a["reasoning_content"] = say(3)
            msgs.append(a)
        conv = {"messages": msgs}
        if i == 4:
            msgs.insert(-1, {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "look", "arguments": {"q": say(2)}}}]})
            msgs.insert(-1, {"role": "tool", "content": say(3)})
            conv["tools"] = [{"type": "function", "function": {
                "name": "look", "description": say(3), "parameters": {"type": "object"}}}]
        convs.append(conv)
    convs.append({"messages": [{"role": "user", "content": say(5)}]})
    convs.append({"messages": [{"role": "user", "content": say(200)},
                               {"role": "assistant", "content": "x"}]})
    return convs


def main():
    args = sys.argv[1:]
    d, seed = args[0], int(args[args.index("--seed") + 1]) if "--seed" in args else 7
    say = sayer(seed)
    open(f"{d}/corpus.txt", "w").write(say(20000))
    convs = mixed(say)
    if "--cut" in args:
        convs.append({"messages": [{"role": "user", "content": say(4)},
                                   {"role": "assistant", "content": say(5)},
                                   {"role": "user", "content": say(40)},
                                   {"role": "assistant", "content": say(3)}]})
    with open(f"{d}/conv.jsonl", "w") as f:
        for c in convs:
            f.write(json.dumps(c) + "\n")
    json.dump([{"role": "user", "content": say(6)},
               {"role": "assistant", "content": "<think>\n" + say(3) + "\n</think>\n\n" + say(4)}],
              open(f"{d}/saved.json", "w"), indent=2)


if __name__ == "__main__":
    main()
