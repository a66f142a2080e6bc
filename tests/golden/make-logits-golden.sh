#!/bin/sh
# make-logits-golden.sh — regenerates tests/golden/logits-*.txt: logits of models made
# by tests/mkmodel (deterministic), computed by Hugging Face transformers v4.51.3's own
# Qwen3ForCausalLM in float32 with eager attention (from_pretrained, no cache). The
# greedy continuation is transformers': each step runs the model on the sequence
# extended by its own previous argmax; the stored rows come from a last run over the
# whole sequence (prompt + continuation).
#
# usage: tests/golden/make-logits-golden.sh BUILDDIR [NAME...]
#   BUILDDIR   a build tree with tests/mkmodel built (make check)
#   NAME       only these goldens (tiny, odd, yarn, ...); default all
# Needs python3 (or $PYTHON) with numpy, torch and transformers 4.51.3, and jq.
set -eu
BUILD=$1
shift
ONLY=" $* "
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PY=${PYTHON:-python3}

# hf_logits MODEL_DIR IDS OUT — float32 logits of every position, raw little endian
hf_logits() {
	"$PY" - "$1" "$2" "$3" >"$TMP/log" 2>&1 <<'PYEOF' || { cat "$TMP/log"; exit 1; }
import sys
import torch
import transformers
from transformers import Qwen3ForCausalLM
if transformers.__version__ != "4.51.3":
    sys.exit("transformers %s: the goldens are transformers 4.51.3's" % transformers.__version__)
model_dir, ids, out = sys.argv[1:]
model = Qwen3ForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                         attn_implementation="eager", local_files_only=True)
model.eval()
with torch.no_grad():
    logits = model(input_ids=torch.tensor([[int(i) for i in ids.split(",")]]),
                   use_cache=False).logits[0]
logits.to(torch.float32).numpy().astype("<f4").tofile(out)
PYEOF
}

# golden NAME MODE PROMPT_IDS GREEDY_STEPS MKMODEL_FLAGS...
#   MODE full: every row in full; MODE summary: per row argmax, top-16 ids and
#   values, sum, sum of squares and 64 sampled columns (for a 151,936-word vocab).
golden() {
	name=$1 mode=$2 ids=$3 steps=$4
	shift 4
	[ "$ONLY" = "  " ] || case $ONLY in *" $name "*) ;; *) return 0 ;; esac
	"$BUILD/tests/mkmodel" --out "$TMP/$name" "$@"
	i=0
	while [ "$i" -lt "$steps" ]; do
		hf_logits "$TMP/$name" "$ids" "$TMP/l.bin"
		next=$("$PY" -c "import numpy as np,sys; v=int(sys.argv[2]); a=np.fromfile(sys.argv[1],'<f4').reshape(-1,v); print(int(a[-1].argmax()))" \
			"$TMP/l.bin" "$(jq .vocab_size "$TMP/$name/config.json")")
		ids="$ids,$next"
		i=$((i + 1))
	done
	hf_logits "$TMP/$name" "$ids" "$TMP/l.bin"
	"$PY" - "$TMP/l.bin" "$ids" "$mode" "$steps" "$*" "$name" "$HERE/logits-$name.txt" <<'PYEOF'
import sys
import numpy as np
path, ids, mode, steps, flags, name, out = sys.argv[1:]
ids = [int(x) for x in ids.split(",")]
a = np.fromfile(path, "<f4").reshape(len(ids), -1)
V = a.shape[1]
lines = [
    "# Logits golden data: Hugging Face transformers 4.51.3 Qwen3ForCausalLM, float32,",
    "# eager attention, over a model written by tests/mkmodel with the flags below. Made",
    "# by tests/golden/make-logits-golden.sh BUILDDIR %s (python3 with torch and" % name,
    "# transformers 4.51.3); checked by tests/unit/test_engine_golden.c. The last `greedy`",
    "# tokens are transformers' own greedy continuation of the prompt.",
    "mkmodel " + flags,
    "tokens " + " ".join(map(str, ids)),
    "greedy %s" % steps,
    "vocab %d" % V,
    "mode " + mode,
]
if mode == "full":
    for r in a:
        lines.append(" ".join("%.9g" % x for x in r))
else:
    cols = [(i * 2371 + 17) % V for i in range(64)]
    lines.append("columns " + " ".join(map(str, cols)))
    for r in a:
        top = np.argsort(-r, kind="stable")[:16]
        lines.append("argmax %d" % int(r.argmax()))
        lines.append("top " + " ".join("%d:%.9g" % (int(i), r[i]) for i in top))
        lines.append("stats %.9g %.9g %.9g" % (float(r.astype(np.float64).sum()),
                     float((r.astype(np.float64) ** 2).sum()), float(np.abs(r).max())))
        lines.append("cols " + " ".join("%.9g" % r[c] for c in cols))
open(out, "w").write("\n".join(lines) + "\n")
PYEOF
	echo "wrote $HERE/logits-$name.txt"
}

# Tiny tied model (mkmodel's default shape, smaller vocab): 8 prompt ids + 32 greedy.
golden tiny full 5,17,200,3,99,140,7,250 32 \
	--vocab-size 256 --seed 11
# Untied, odd shape: 8 query heads on 2 KV heads, head_dim 16, rope_theta 1e4,
# hidden 96 != 8*16, three layers.
golden odd full 1,2,3,290,150,77,8,9 32 \
	--vocab-size 300 --hidden-size 96 --intermediate-size 160 --layers 3 --heads 8 \
	--kv-heads 2 --head-dim 16 --rope-theta 1e4 --no-tie --seed 12
# YaRN rope_scaling (transformers derives factor 16384/4096 = 4 from the positions).
golden yarn full 40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55 8 \
	--vocab-size 256 --yarn-factor 4 --yarn-original-max 4096 --max-position 16384 --seed 13
# YaRN's optional members: a given attention factor and ramp (beta_fast/beta_slow), over
# rope_theta 1e4 so that the ramp moves; then DeepSeek's mscale/mscale_all_dim ratio.
golden yarn-af full 40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55 8 \
	--vocab-size 256 --yarn-factor 4 --yarn-original-max 4096 --max-position 16384 \
	--rope-theta 1e4 --yarn-attention-factor 1.5 --yarn-beta-fast 8 --yarn-beta-slow 2 --seed 15
golden yarn-ms full 60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75 8 \
	--vocab-size 256 --yarn-factor 8 --yarn-original-max 2048 --max-position 16384 \
	--yarn-mscale 0.707 --yarn-mscale-all-dim 1 --seed 16
# Linear rope_scaling: positions divided by the factor.
golden linear full 80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95 8 \
	--vocab-size 256 --linear-factor 2.5 --rope-theta 1e4 --seed 17
# Qwen3-0.6B's exact shape (151,936-word vocab, 28 layers, 1.2 GB): 16 prompt ids +
# 4 greedy steps (each run loads the 1.2 GB model).
golden q06 summary 151643,872,1079,264,3405,311,279,3738,315,9625,30,151645,198,151644,77091,198 4 \
	--preset 0.6B --seed 14
