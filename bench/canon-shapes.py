#!/usr/bin/env python3
"""`cookwala canon` against the samples' Python on 25 MB documents of seven shapes, built from
inputs we did not write (the standard's examples, the samples' bundle, the generated recipe of
bench/cli.sh): where one shape favours one side, another shape shows it.

  A  the standard's examples, {"items": [...]}, compact
  B  the same, indented by two (json.dump indent=2)
  C  the bundle's recipes and devices, compact
  D  bench/cli.sh's generated 25 MB recipe, compact
  E  the bundle's recipes and devices, ASCII with \\uXXXX escapes, indent 1 (json.dump defaults)
  F  long texts (words, accents, CJK, emoji, escapes), raw UTF-8, indent 2
  G  the same texts, ASCII with \\uXXXX escapes (what json.dump writes by default)

Outputs are compared byte for byte first; then the median wall time of RUNS runs of ours and
one of Python's (seconds each), process start included on both sides. Numbers only.

    bench/cli.sh first (it builds the binary, the venv and the generated recipe), then
    bench/canon-shapes.py             # RUNS=9 by default
"""
import glob
import json
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CW = os.path.join(ROOT, 'target', 'release', 'cookwala')
PY = os.environ.get('PY', os.path.join(ROOT, 'bench', '.venv', 'bin', 'python'))
WORK = os.path.join(ROOT, 'target', 'cw-bench', 'shapes')
EXAMPLES = os.path.join(ROOT, '..', 'shared', 'standards', 'cookwala', 'examples')
GEN = os.path.join(ROOT, 'target', 'cw-bench', 'cli', 'big', 'gen-0000.json')
RUNS = int(os.environ.get('RUNS', '9'))
SIZE = 25_000_000


def fill(items, target, rng):
    out, size = [], 0
    while size < target:
        d = rng.choice(items)
        out.append(d)
        size += len(json.dumps(d, ensure_ascii=False))
    return out


def make():
    os.makedirs(WORK, exist_ok=True)
    rng = random.Random(7)
    bundle_path = subprocess.run([PY, os.path.join(ROOT, 'bench', 'py_dryrun.py'), 'bundle-path'],
                                 capture_output=True, text=True, check=True).stdout.strip()
    with open(bundle_path) as fh:
        bundle = json.load(fh)
    examples = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, '**', '*.json'), recursive=True)):
        with open(path) as fh:
            examples.append(json.load(fh))
    docs = list(bundle['recipes'].values()) + list(bundle['devices'].values())
    words = ('tomato onion garlic stir fold simmer crème brûlée à la française トマト サラダ 😀 '
             '"quoted" back\\slash tab\t new\nline').split(' ')

    def text(n):
        return ' '.join(rng.choice(words) for _ in range(n))

    texts, size = [], 0
    while size < SIZE:
        d = {'id': f'step-{len(texts)}', 'text': {'en': text(150), 'pt': text(120)},
             'notes': [text(30) for _ in range(3)]}
        texts.append(d)
        size += len(json.dumps(d, ensure_ascii=False))
    with open(GEN) as fh:
        gen = json.load(fh)
    shapes = {
        'A': ({'items': fill(examples, SIZE, rng)}, dict(ensure_ascii=False, separators=(',', ':'))),
        'B': ({'items': fill(examples, SIZE * 0.7, rng)}, dict(ensure_ascii=False, indent=2)),
        'C': ({'items': fill(docs, SIZE, rng)}, dict(ensure_ascii=False, separators=(',', ':'))),
        'D': (gen, dict(ensure_ascii=False, separators=(',', ':'))),
        'E': ({'items': fill(docs, SIZE * 0.9, rng)}, dict(indent=1)),
        'F': ({'items': texts}, dict(ensure_ascii=False, indent=2)),
        'G': ({'items': texts[:len(texts) * 2 // 3]}, dict(indent=2)),
    }
    for name, (doc, style) in shapes.items():
        with open(os.path.join(WORK, f'{name}.json'), 'w') as fh:
            json.dump(doc, fh, **style)


def wall(cmd, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    for need in (CW, PY, GEN):
        if not os.path.exists(need):
            sys.exit(f'canon-shapes: {need} is missing (run bench/cli.sh first)')
    if not os.path.exists(os.path.join(WORK, 'G.json')):
        print('canon-shapes: writing the documents', file=sys.stderr)
        make()
    py_jcs = os.path.join(ROOT, 'bench', 'py_jcs.py')
    print(f"cookwala canon vs the samples' Python (ours: median of {RUNS}; Python: one run)")
    print(f"  {'shape':<6} {'MB':>6} {'ours':>9} {'python':>9} {'ratio':>7}")
    for name in 'ABCDEFG':
        path = os.path.join(WORK, f'{name}.json')
        ours = subprocess.run([CW, 'canon', path], capture_output=True, check=True).stdout
        theirs = subprocess.run([PY, py_jcs, 'canon', path], capture_output=True, check=True).stdout
        if ours != theirs:
            sys.exit(f'canon-shapes: the outputs for {name} differ')
        o, p = wall([CW, 'canon', path], RUNS), wall([PY, py_jcs, 'canon', path], 1)
        print(f"  {name:<6} {os.path.getsize(path) / 1e6:>6.1f} {o * 1000:>7.1f}ms {p:>8.2f}s {p / o:>6.1f}x")


if __name__ == '__main__':
    main()
