# hf.py MODEL_DIR QWENCHAT NAME OUT_JSON — transformers on the same GPU as qwenchat:
# its float32 logits against `qwenchat logits --backend cuda` on the same ids (max |d| /
# max |logit|, argmax agreement), and its bf16 greedy decode speed with a static cache
# (generate of 128 new tokens after a 512-token prompt, minus one of 1 new token).
import json, os, subprocess, sys, time
import numpy as np
import torch
from transformers import AutoModelForCausalLM

path, qwenchat, name, out = sys.argv[1:5]
res = {"model": name, "torch": torch.__version__}
import transformers
res["transformers"] = transformers.__version__
rng = np.random.default_rng(1)
ids = [int(x) for x in rng.integers(0, 1000, 64)]
subprocess.run([qwenchat, "logits", "-m", path, "--backend", "cuda", "--out", "/tmp/ours.bin"],
               input=" ".join(map(str, ids)).encode(), check=True)
m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).cuda().eval()
with torch.no_grad():
    ref = m(torch.tensor([ids]).cuda()).logits[0].float().cpu().numpy()
V = ref.shape[1]
ours = np.fromfile("/tmp/ours.bin", dtype="<f4").reshape(-1, V)
res["logits_rel_err"] = float(np.abs(ours - ref).max() / np.abs(ref).max())
res["argmax_agree"] = float((ours.argmax(1) == ref.argmax(1)).mean())
del m
torch.cuda.empty_cache()
m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).cuda().eval()
prompt = torch.tensor([rng.integers(0, 1000, 512).tolist()]).cuda()

def gen(n):
    torch.cuda.synchronize()
    t = time.perf_counter()
    with torch.no_grad():
        m.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                   cache_implementation="static", pad_token_id=0)
    torch.cuda.synchronize()
    return time.perf_counter() - t

gen(8)
t1 = min(gen(1) for _ in range(2))
t128 = min(gen(128) for _ in range(2))
res["generate_decode_tok_s"] = 127 / (t128 - t1)
res["generate_first_token_s"] = t1
print(json.dumps(res))
json.dump(res, open(out, "w"))
