"""jsonschema_check.py — the schema recognizer against Python's jsonschema.

Random schemas of every keyword the recognizer follows (and a few written by hand
as pydantic writes them) go to tests/jsonwalk, which walks random texts the
recognizer lets through to the end; each must parse as JSON and validate against
its schema (jsonschema's Draft 2020-12 validator). Then each text with a byte
changed is read again: whatever the recognizer still calls whole must validate too.
Schemas with keywords it does not follow must be refused. Patterns are random
regular expressions of the syntax ECMA-262 and Python's re read alike, with anchors
or without (jsonschema searches them), and maxLength at times.

usage: jsonschema_check.py JSONWALK TMPDIR [SCHEMAS]
Prints one line per failure and a summary; exit 1 on any failure.
"""
import datetime
import json
import random
import re
import subprocess
import sys

import jsonschema

WALK, TMP = sys.argv[1], sys.argv[2]
N_SCHEMAS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
rng = random.Random(20261203)
failures = 0
no_length = 0  # schemas refused: no string of a pattern within its length bounds
unended = 0  # walks of a pattern's schema that found no end within jsonwalk's room
changed_whole = 0  # texts with a byte changed that the recognizer still reads whole

NAMES = ["a", "ab", "abc", "name", "age", "é", "a\"b", "x y", "", "tags", "n\\m", "日本"]
STRINGS = ["", "a", "ab", "red", "green", "é", "a\"b", "\n", "😀", "x/y", "\\"]
TYPES = ["string", "integer", "number", "boolean", "null"]


def literal(depth=0):
    k = rng.randrange(8 if depth < 2 else 6)
    return [lambda: rng.choice(STRINGS), lambda: rng.randrange(-20, 200),
            lambda: rng.choice([1.5, -0.25, 1e20, 0.1]), lambda: rng.choice([True, False]),
            lambda: None, lambda: rng.choice(STRINGS),
            lambda: [literal(depth + 1) for _ in range(rng.randrange(3))],
            lambda: {rng.choice(NAMES): literal(depth + 1) for _ in range(rng.randrange(3))}][k]()


def of_type(t, depth):
    """A schema whose values are of JSON type class t."""
    if t == "object":
        s = {"type": "object"}
        if rng.random() < 0.75:
            names = rng.sample(NAMES, rng.randrange(1, 6))
            s["properties"] = {n: gen(depth + 1) for n in names}
            if rng.random() < 0.7:
                s["required"] = [n for n in names if rng.random() < 0.6]
        else:
            s["additionalProperties"] = rng.choice([False, True, None, "schema"])
            if s["additionalProperties"] is None:
                del s["additionalProperties"]
            elif s["additionalProperties"] == "schema":
                s["additionalProperties"] = gen(depth + 1)
        return s
    if t == "array":
        s = {"type": "array", "items": gen(depth + 1)}
        if rng.random() < 0.3:  # a tuple, then items or none
            s["prefixItems"] = [gen(depth + 1) for _ in range(rng.randrange(1, 4))]
            if rng.random() < 0.4:
                s["items"] = False
        if rng.random() < 0.5:
            s["minItems"] = rng.randrange(3)
        if rng.random() < 0.5:
            s["maxItems"] = s.get("minItems", 0) + rng.randrange(4)
        if "prefixItems" not in s and rng.random() < 0.2:  # set[Literal[...]]
            s["items"] = {"enum": list({json.dumps(v): v for v in [literal()
                                                               for _ in range(4)]}.values())}
            s["uniqueItems"] = True
            s["minItems"] = min(s.get("minItems", 0), len(s["items"]["enum"]))
        if s["items"] is False:  # no more values than the tuple's
            s["minItems"] = min(s.get("minItems", 0), len(s["prefixItems"]))
        return s
    if t == "string":
        s = {"type": "string"}
        if rng.random() < 0.2:
            s["format"] = rng.choice(["date", "time", "date-time", "uuid", "email", "ipv4"])
            return s
        if rng.random() < 0.25:
            s["pattern"] = pattern()
            if rng.random() < 0.3:
                s["minLength"] = rng.randrange(1, 8)
            if rng.random() < 0.4:
                s["maxLength"] = s.get("minLength", 0) + rng.randrange(0, 30)
            return s
        if rng.random() < 0.4:
            s["minLength"] = rng.randrange(4)
        if rng.random() < 0.4:
            s["maxLength"] = s.get("minLength", 0) + rng.randrange(6)
        return s
    s = {"type": t}
    if t in ("integer", "number") and rng.random() < 0.6:
        pick = (lambda: rng.randrange(-300, 300)) if t == "integer" or rng.random() < 0.5 \
            else (lambda: rng.randrange(-300, 300) / rng.choice([2, 4, 10, 3]))
        lo, hi = sorted([pick(), pick()])
        if rng.random() < 0.7:
            s[rng.choice(["minimum", "exclusiveMinimum"])] = lo
        if rng.random() < 0.7 or len(s) == 1:
            s[rng.choice(["maximum", "exclusiveMaximum"])] = hi + 2
    if t == "integer" and rng.random() < 0.3:
        s["multipleOf"] = rng.choice([2, 3, 5, 7, 10, 25, 1000])
        lo = s.get("minimum", s.get("exclusiveMinimum", -10 ** 9) + 1)
        hi = s.get("maximum", s.get("exclusiveMaximum", 10 ** 9) - 1)
        if -(-lo // s["multipleOf"]) * s["multipleOf"] > hi:
            del s["multipleOf"]  # no multiple between the bounds
    return s


RX_ATOMS = ["a", "b", "Z", "0", "-", "_", "@", " ", "é", "€", "😀", "\\.", "\\-", "\\/",
            "\\\\", "\\$", "\\^", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", ".",
            "\\x41", "\\u00e9", "\\n", "\\t", "[a-c]", "[^x-z]", "[\\d_]", "[^\\d]",
            "[A-Za-z0-9]", "[-+]", "[é€]", "[^a]", "[\\s\\S]", "[.]", "]", "}"]


def pattern_piece(depth):
    if depth < 2 and rng.random() < 0.25:
        inner = "|".join(pattern_seq(depth + 1) for _ in range(rng.randrange(1, 4)))
        atom = rng.choice(["(", "(?:"]) + inner + ")"
    else:
        atom = rng.choice(RX_ATOMS)
    q = rng.random()
    if q < 0.5 or (atom[0] == "(" and q < 0.9):  # (Python's re backtracks on (a*)*)
        return atom
    if atom[0] == "(":
        return atom + rng.choice(["?", "{1,2}"])
    if q < 0.8:
        return atom + rng.choice(["*", "+", "?", "*?", "+?"])
    m = rng.randrange(3)
    return atom + rng.choice([f"{{{m}}}", f"{{{m},}}", f"{{{m},{m + rng.randrange(3)}}}"])


def pattern_seq(depth):
    return "".join(pattern_piece(depth) for _ in range(rng.randrange(1, 4)))


def pattern():
    body = pattern_seq(0)
    head, tail = rng.random() < 0.6, rng.random() < 0.6
    if rng.random() < 0.2:
        body = body + "|" + pattern_seq(0)
        if head or tail:
            body = "(" + body + ")"
    return ("^" if head else "") + body + ("$" if tail else "")


def gen(depth=0):
    k = rng.randrange(10 if depth < 3 else 6)
    if k < 2:
        return of_type(rng.choice(TYPES), depth)
    if k == 2:
        vals = [literal() for _ in range(rng.randrange(1, 6))]
        return {"enum": vals} if rng.random() < 0.8 else {"const": vals[0]}
    if k == 3:
        return {"type": rng.sample(TYPES, 2)}
    if k == 4:
        return rng.choice([{}, True, {"title": "anything"}])
    if k == 5:
        return of_type("string", depth)
    if k in (6, 7):
        return of_type(rng.choice(["object", "array"]), depth)
    if rng.random() < 0.4:
        return alike(depth)
    # anyOf or oneOf of alternatives of different type classes
    classes = rng.sample(["object", "array", "string", "integer", "boolean", "null"],
                         rng.randrange(2, 4))
    alts = [of_type(c, depth + 1) for c in classes]
    if "string" in classes and rng.random() < 0.5:
        alts[classes.index("string")] = {"enum": rng.sample(STRINGS, 3)}
    return {rng.choice(["anyOf", "oneOf"]): alts, "title": "choice"}


def alike(depth):
    """An anyOf whose alternatives may begin alike (read side by side), or a oneOf
    of objects that a required tag tells apart (pydantic's tagged union)."""
    n = rng.randrange(2, 5)
    if rng.random() < 0.3:
        tags = rng.sample(STRINGS, n)
        alts = []
        for t in tags:
            o = of_type("object", depth + 1)
            o["properties"] = dict(o.get("properties", {}), kind={"const": t})
            o["required"] = sorted(set(o.get("required", [])) | {"kind"})
            o.pop("additionalProperties", None)
            alts.append(o)
        return {"oneOf": alts, "discriminator": {"propertyName": "kind"}}
    cls = rng.choice(["object", "string", "integer", "number", "array", "mixed"])
    if cls == "mixed":
        alts = [gen(depth + 1) for _ in range(n)]
    else:
        alts = [of_type(cls, depth + 1) for _ in range(n)]
    return {"anyOf": alts}


# Formats: jsonschema checks date, uuid, email and ipv4 itself; time and date-time (which it leaves
# to a package Debian lacks) by RFC 3339's shape and Python's fromisoformat.
FORMATS = jsonschema.FormatChecker(["date", "uuid", "email", "ipv4"])
RFC3339_TIME = r"\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})"


@FORMATS.checks("time", raises=ValueError)
def is_time(s):
    if not isinstance(s, str):
        return True  # a format is of strings only
    return re.fullmatch(RFC3339_TIME, s) is not None and bool(datetime.time.fromisoformat(s))


@FORMATS.checks("date-time", raises=ValueError)
def is_date_time(s):
    if not isinstance(s, str):
        return True
    return (re.fullmatch(r"\d{4}-\d{2}-\d{2}T" + RFC3339_TIME, s) is not None and
            bool(datetime.datetime.fromisoformat(s)))


HAND = [
    # pydantic: a model with an Optional field, an enum in $defs, a nested list
    {"$defs": {"Color": {"enum": ["red", "green", "blue"], "title": "Color", "type": "string"},
               "Pet": {"properties": {"name": {"title": "Name", "type": "string", "maxLength": 10},
                                      "age": {"anyOf": [{"type": "integer"}, {"type": "null"}],
                                              "default": None, "title": "Age"}},
                       "required": ["name"], "title": "Pet", "type": "object"}},
     "properties": {"owner": {"title": "Owner", "type": "string"},
                    "color": {"$ref": "#/$defs/Color"},
                    "pets": {"items": {"$ref": "#/$defs/Pet"}, "title": "Pets", "type": "array",
                             "maxItems": 3}},
     "required": ["owner", "color", "pets"], "title": "Household", "type": "object",
     "additionalProperties": False},
    # recursion
    {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["v"]}}, "$ref": "#/$defs/node"},
    # OpenAI's strict mode: every property required, no others
    {"type": "object", "properties": {"steps": {"type": "array", "items": {
        "type": "object", "properties": {"explanation": {"type": "string"},
                                         "output": {"type": "string"}},
        "required": ["explanation", "output"], "additionalProperties": False}},
        "final_answer": {"type": "string"}},
     "required": ["steps", "final_answer"], "additionalProperties": False},
    {"type": "number"}, {"type": "integer"}, {"enum": [1, 10, 100, "1"]},
    # pydantic's Field(ge=0, le=120) and Field(gt=0.5, lt=1)
    {"type": "object", "properties": {
        "age": {"type": "integer", "minimum": 0, "maximum": 120, "title": "Age"},
        "p": {"type": "number", "exclusiveMinimum": 0.5, "exclusiveMaximum": 1},
        "t": {"type": "number", "minimum": -273.15},
        "born": {"type": "string", "format": "date"},
        "seen": {"type": "string", "format": "date-time"},
        "id": {"type": "string", "format": "uuid"},
        "mail": {"type": "string", "format": "email"},
        "ip": {"type": "string", "format": "ipv4"}},
     "required": ["age", "p", "t", "born", "seen", "id", "mail", "ip"]},
    {"type": "integer", "minimum": 1000000, "maximum": 1000001},
    {"type": "number", "minimum": 0.1, "maximum": 0.1},
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    {"allOf": [{"type": "boolean"}], "description": "one schema"},
    # a large enum of shared prefixes (numbers that begin others among them)
    {"enum": ["item%03d" % i for i in range(300)] + list(range(0, 2000, 7)) + [1.5, -3]},
    # pydantic's Union[Cat, Dog] and its tagged form, in a list
    {"$defs": {"Cat": {"properties": {"pet_type": {"const": "cat", "title": "Pet Type",
                                                   "type": "string"},
                                      "meows": {"title": "Meows", "type": "integer"}},
                       "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
               "Dog": {"properties": {"pet_type": {"const": "dog", "title": "Pet Type",
                                                   "type": "string"},
                                      "barks": {"title": "Barks", "type": "number"}},
                       "required": ["pet_type", "barks"], "title": "Dog", "type": "object"}},
     "properties": {
         "pets": {"items": {"anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]},
                  "title": "Pets", "type": "array"},
         "best": {"discriminator": {"mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"},
                                    "propertyName": "pet_type"},
                  "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
                  "title": "Best"}},
     "required": ["pets", "best"], "title": "Model", "type": "object"},
    # pydantic's tuple[int, str] and tuple[float, ...]
    {"type": "object", "properties": {
        "pair": {"maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"},
                                                                {"type": "string"}],
                 "type": "array"},
        "rest": {"items": {"type": "number"}, "type": "array"}},
     "required": ["pair"]},
    # Union[int, float, str] with bounds that overlap
    {"anyOf": [{"type": "integer", "minimum": -5, "maximum": 5}, {"type": "number",
               "exclusiveMinimum": 3}, {"type": "string", "maxLength": 3},
               {"type": "string", "format": "date"}]},
]

REFUSED = [
    {"type": "number", "multipleOf": 0.5}, {"type": "string", "pattern": "^(?=a)"},
    {"type": "string", "pattern": "^a|b$"}, {"type": "string", "pattern": "(a)\\1"},
    {"type": "string", "pattern": "\\bx"}, {"type": "string", "pattern": "(?P<n>a)"},
    {"type": "string", "pattern": "a{2,1}"}, {"type": "string", "pattern": "[]"},
    {"type": "string", "pattern": "a**"}, {"type": "string", "pattern": "(a"},
    {"type": "string", "pattern": "^a{3}$", "maxLength": 2},
    {"type": "string", "pattern": "^a$", "minLength": 2},
    {"type": "string", "pattern": "^(?:ab)+$", "minLength": 3, "maxLength": 3},
    {"type": "string", "pattern": "a", "minLength": 129},
    {"type": "string", "pattern": "a", "format": "date"},
    {"type": "string", "pattern": "^[a-z]{200}$"},
    {"type": "string", "format": "hostname"}, {"not": {}}, {"if": {}},
    {"type": "string", "format": "time", "maxLength": 12},
    {"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]},
    {"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}},
               {"type": "object", "properties": {"k": {"const": "b"}}}]},  # k not required
    {"properties": {"a": {}}, "required": ["b"]}, {"$ref": "other.json#/x"},
    {"type": "array", "uniqueItems": True, "items": {"type": "integer"}},
    {"type": "object", "patternProperties": {}},
]


def check(i, schema):
    global failures
    path = f"{TMP}/schema{i}.json"
    with open(path, "w") as f:
        json.dump(schema, f)
    r = subprocess.run([WALK, path, "12", str(i)], capture_output=True, text=True)
    if r.returncode == 2 and "no string of it has a length within" in r.stderr:
        global no_length  # a pattern whose strings all miss minLength..maxLength
        no_length += 1
        return []
    if r.returncode == 4 and "pattern" in json.dumps(schema):
        global unended  # random bytes seldom make the match of a pattern
        unended += 1
        return []
    if r.returncode != 0:
        failures += 1
        print(f"FAIL: schema {i}: jsonwalk exit {r.returncode}: {r.stderr.strip()}\n"
              f"  {json.dumps(schema)}\n  last: {r.stdout.splitlines()[-1:]}")
        return []
    validator = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)

    def expect_valid(text, what):
        global failures
        try:
            validator.validate(json.loads(text))
        except (ValueError, jsonschema.ValidationError) as e:
            failures += 1
            print(f"FAIL: schema {i}: {what} {json.dumps(text)} is not a value of "
                  f"{json.dumps(schema)}: {str(e).splitlines()[0]}")

    texts = [json.loads(line) for line in r.stdout.split("\n") if line]
    for t in texts:
        expect_valid(t, "walked text")
    # one byte changed: a text still whole must still validate
    muts = []
    for t in texts:
        b = bytearray(t.encode())
        if b:
            at = rng.randrange(len(b))
            b[at] = ord(rng.choice('{}[]":,0-.e1a tfn\\'))
            muts.append(b.decode("utf-8", "replace"))
    inp = "".join(json.dumps(m) + "\n" for m in muts)
    r = subprocess.run([WALK, path, "check", "0"], input=inp, capture_output=True, text=True)
    for m, verdict in zip(muts, r.stdout.split()):
        if verdict == "1":
            global changed_whole
            changed_whole += 1
            expect_valid(m, "changed text, passed whole,")
    return texts


walked = 0
schemas = HAND + [gen() for _ in range(N_SCHEMAS)]
for i, s in enumerate(schemas):
    walked += len(check(i, s))
for k, s in enumerate(REFUSED):
    path = f"{TMP}/refused{k}.json"
    with open(path, "w") as f:
        json.dump(s, f)
    r = subprocess.run([WALK, path, "1", "0"], capture_output=True, text=True)
    if r.returncode != 2:
        failures += 1
        print(f"FAIL: {json.dumps(s)} was not refused (exit {r.returncode})")
print(f"{len(schemas)} schemas, {walked} texts walked and validated ({changed_whole} "
      f"whole after a byte changed, validated too), {unended} walks of patterns "
      f"without an end in reach, {no_length} refused for a pattern whose strings miss "
      f"the length bounds, {len(REFUSED)} schemas refused; "
      f"{failures} failures")
sys.exit(1 if failures else 0)
