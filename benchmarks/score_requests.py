# score_requests.py — the requests of BENCHMARKS.md's scoring table, one definition
# for both sides (score-serve.py, score-torch.py): CONTEXTS contexts of CTX seeded
# random token ids, each with CHOICES continuations of CONT ids, as (context,
# continuation) pairs in the order they are sent.
import random


def requests(contexts, ctx, cont, choices):
    rnd = random.Random(1)
    out = []
    for _ in range(contexts):
        c = [rnd.randrange(100, 150000) for _ in range(ctx)]
        for _ in range(choices):
            out.append((c, [rnd.randrange(100, 150000) for _ in range(cont)]))
    return out
