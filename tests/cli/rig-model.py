#!/usr/bin/env python3
"""rig-model.py -- makes a tests/mkmodel model (untied, bf16) write a chosen token
sequence whatever its input, so that a test can steer its output exactly.

usage: rig-model.py MODEL_DIR [--end ID] ID...

Every embedding row gets the constant 10 in residual dimension 0, no layer writes to
that dimension (row 0 of every o_proj and down_proj is zero), and the final norm keeps
only it; the logits are then lm_head[:, 0] times one positive number at every position.
lm_head[:, 0] ranks the script: the k-th ID gets 127 - k/2 (exact in bf16), every
other token 0. Sampled greedily with repetition_penalty 10, a token already in the
last 64 (prompt or answer) drops to a tenth of its value, below every unused one, so
the IDs come out in order. --end ID (e.g. <|im_end|>, which every chat prompt holds)
gets 127.5: penalised by the prompt to 12.75, it is picked once every scripted token
has been used (they then sit at <= 12.7). The prompt's last 64 tokens must hold none of
the scripted IDs.
"""
import json
import struct
import sys

args = sys.argv[1:]
end = None
if len(args) >= 2 and args[1] == "--end":
    end = int(args[2])
    del args[1:3]
path, script = args[0] + "/model.safetensors", [int(x) for x in args[1:]]
assert len(script) <= 120 and len(set(script)) == len(script), "at most 120 distinct ids"
f = open(path, "r+b")
n = struct.unpack("<Q", f.read(8))[0]
hdr = json.loads(f.read(n))


def bf16(x):
    b = struct.pack("<f", x)
    assert b[:2] == b"\0\0", "%g is not exact in bf16" % x
    return b[2:]


def tensor(name):
    t = hdr[name]
    assert t["dtype"] == "BF16", name
    f.seek(8 + n + t["data_offsets"][0])
    return t, bytearray(f.read(t["data_offsets"][1] - t["data_offsets"][0]))


def store(t, b):
    f.seek(8 + n + t["data_offsets"][0])
    f.write(b)


t, b = tensor("model.embed_tokens.weight")
V, H = t["shape"]
for i in range(V):
    b[i * H * 2:i * H * 2 + 2] = bf16(10.0)
store(t, b)
layer = 0
while "model.layers.%d.self_attn.o_proj.weight" % layer in hdr:
    for w in ("self_attn.o_proj", "mlp.down_proj"):
        t, b = tensor("model.layers.%d.%s.weight" % (layer, w))
        b[0:t["shape"][1] * 2] = bytes(t["shape"][1] * 2)
        store(t, b)
    layer += 1
t, b = tensor("model.norm.weight")
store(t, bf16(1.0) + bytes(2 * (H - 1)))
t, b = tensor("lm_head.weight")
for i in range(V):
    b[i * H * 2:i * H * 2 + 2] = bytes(2)
for k, tid in enumerate(script):
    b[tid * H * 2:tid * H * 2 + 2] = bf16(127.0 - k / 2)
if end is not None:
    b[end * H * 2:end * H * 2 + 2] = bf16(127.5)
store(t, b)
