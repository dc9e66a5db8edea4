"""Oracle data for the Python-compatible writer, printed as JSON lines.

Usage: python3 python-corpus.py FLOATS DOCS SEED

First FLOATS lines: ["<16 hex of the IEEE-754 bits>", "<repr(x)>"].
Then DOCS lines: [input_text, compact_text, pretty_text] where input_text is a random
document with unsorted keys, compact_text is json.dumps(doc, sort_keys=True,
separators=(',', ':')) and pretty_text is json.dumps(doc, sort_keys=True, indent=2) + "\\n".
"""
import json
import math
import random
import struct
import sys

floats, docs, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
out = sys.stdout


def emit_float(x):
    bits = struct.unpack(">Q", struct.pack(">d", x))[0]
    out.write(json.dumps(["%016x" % bits, repr(x)]) + "\n")


edges = [0.0, -0.0, 5e-324, 1.7976931348623157e308, 0.05, 1e-5, 1e-7, 1e15, 1e16, 1e21, 16.0,
         1.2345678901234568e17, 0.1 + 0.2, 1 / 3]
edges += [float("1e%d" % e) for e in range(-320, 308)]
edges += [float("%de%d" % (rng.randrange(1, 10**8), rng.randrange(-30, 30))) for _ in range(200)]
n = 0
for x in edges:
    if n < floats:
        emit_float(x)
        n += 1
while n < floats:
    x = struct.unpack(">d", struct.pack(">Q", rng.getrandbits(64)))[0]
    if math.isfinite(x):
        emit_float(x)
        n += 1

ALPHABET = ["a", "b", "z", "A", "_", "-", "/", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f",
            "é", "ß", "€", "\u2028", "\ufb00", "\uffff", "😀", "𝄞", "中", " "]


def text():
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 8)))


def number():
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randrange(-1000, 1000)
    if kind == 1:
        return rng.randrange(-(10**30), 10**30)
    if kind == 2:
        return float(rng.randrange(-100, 100))
    if kind == 3:
        return rng.uniform(-1e6, 1e6)
    if kind == 4:
        return float("%de%d" % (rng.randrange(1, 10**6), rng.randrange(-25, 25)))
    x = struct.unpack(">d", struct.pack(">Q", rng.getrandbits(64)))[0]
    return x if math.isfinite(x) else 0.5


def value(depth):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return number()
    if kind in (3, 4):
        return text()
    if kind == 5:
        return [value(depth + 1) for _ in range(rng.randrange(0, 4))]
    keys = {text() for _ in range(rng.randrange(0, 5))}
    return {k: value(depth + 1) for k in keys}


for _ in range(docs):
    doc = {text(): value(1) for _ in range(rng.randrange(1, 6))}
    out.write(json.dumps([
        json.dumps(doc, ensure_ascii=False),
        json.dumps(doc, sort_keys=True, separators=(",", ":")),
        json.dumps(doc, sort_keys=True, indent=2) + "\n",
    ]) + "\n")
