#!/usr/bin/env python3
"""Times the upstream Python reference (cookwala_samples.jcs, PyPI cookwala-samples==0.3.0).

Usage:
  py_jcs.py hashes NAME=PATH...                 # NAME<TAB>rel_path<TAB>sha256:... per document
  py_jcs.py canon FILE                          # what `cookwala canon FILE` does, upstream:
                                                # json.loads + canonical, bytes to stdout
  py_jcs.py parse [--runs N] [--run-secs S] NAME=PATH...
                                                # json.loads per document (*.json) or line
                                                # (*.ndjson): records shaped like cw-bench's
  py_jcs.py run [--runs N] [--run-secs S] NAME=PATH...
                                                # one JSON object per measurement (same shape
                                                # as cw-bench's records)

Documents are the *.json files under PATH (recursively, sorted by relative path), read once
before timing. MB/s uses the length of the JCS bytes the document hash covers, like cw-bench.
"""
import json
import os
import sys
import time

from cookwala_samples.jcs import canonical, doc_hash

EXCLUDE = ('hash', 'signature')


def load_set(spec):
    name, _, root = spec.partition('=')
    if not root:
        sys.exit(f'py_jcs: document sets are NAME=PATH, got {spec!r}')
    if os.path.isfile(root):
        files = [(os.path.basename(root), root)]
    else:
        files = []
        for dirpath, _dirs, names in os.walk(root):
            for n in names:
                if n.endswith('.json'):
                    full = os.path.join(dirpath, n)
                    rel = os.path.relpath(full, root).replace(os.sep, '/')
                    files.append((rel, full))
    # Sort like Rust's PathBuf ordering (component-wise), which equals sorting the split paths.
    files.sort(key=lambda f: f[0].split('/'))
    docs = []
    for rel, full in files:
        with open(full, 'rb') as fh:
            raw = fh.read()
        obj = json.loads(raw)
        body = {k: v for k, v in obj.items() if k not in EXCLUDE} if isinstance(obj, dict) else obj
        docs.append({'rel': rel, 'raw': raw, 'obj': obj, 'jcs_len': len(canonical(body).encode('utf-8'))})
    return name, docs


def load_inputs(spec):
    """The inputs of a parse set: each *.json file, each non-blank line of each *.ndjson file."""
    name, _, root = spec.partition('=')
    paths = [root] if os.path.isfile(root) else sorted(
        os.path.join(d, n) for d, _s, ns in os.walk(root) for n in ns if n.endswith(('.json', '.ndjson')))
    inputs = []
    for path in paths:
        with open(path, 'rb') as fh:
            raw = fh.read()
        if path.endswith('.ndjson'):
            inputs += [line for line in raw.split(b'\n') if line.strip()]
        else:
            inputs.append(raw)
    return name, inputs


def measure(fn, run_secs, runs):
    """Calibrate an iteration count to ~run_secs, then return (iters, sorted per-iter seconds)."""
    iters = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        secs = time.perf_counter() - t0
        if secs >= run_secs / 10:
            iters = max(1, int(run_secs / (secs / iters) + 0.999))
            break
        iters *= 10 if secs * 100 < run_secs / 10 else 2
    out = []
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        out.append((time.perf_counter() - t0) / iters)
    out.sort()
    return iters, out


def median(xs):
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def record(set_name, op, docs, sample):
    iters, per = sample
    med = median(per)
    n = len(docs)
    nbytes = sum(d['jcs_len'] for d in docs)
    return {
        'set': set_name, 'impl': 'python-ref', 'op': op, 'docs': n, 'bytes': nbytes,
        'iters': iters, 'runs': len(per), 'median_s': med, 'min_s': per[0], 'max_s': per[-1],
        'docs_per_s': n / med, 'mb_per_s': nbytes / med / 1e6,
    }


def main(argv):
    if not argv or argv[0] not in ('hashes', 'run', 'canon', 'parse'):
        sys.exit(__doc__)
    cmd, rest = argv[0], argv[1:]
    if cmd == 'canon':
        with open(rest[0], 'rb') as fh:
            obj = json.loads(fh.read())
        sys.stdout.buffer.write(canonical(obj).encode('utf-8'))
        return
    runs, run_secs, specs = 5, 0.3, []
    it = iter(rest)
    for a in it:
        if a == '--runs':
            runs = int(next(it))
        elif a == '--run-secs':
            run_secs = float(next(it))
        elif a == '--smoke':
            runs, run_secs = 1, 0.0
        else:
            specs.append(a)
    if cmd == 'parse':
        for spec in specs:
            name, inputs = load_inputs(spec)

            def loads_all():
                for raw in inputs:
                    json.loads(raw)

            iters, per = measure(loads_all, run_secs, runs)
            med = median(per)
            nbytes = sum(len(r) for r in inputs)
            print(json.dumps({'set': name, 'impl': 'python-ref', 'op': 'parse', 'docs': len(inputs),
                              'bytes': nbytes, 'iters': iters, 'runs': len(per), 'median_s': med,
                              'min_s': per[0], 'max_s': per[-1], 'docs_per_s': len(inputs) / med,
                              'mb_per_s': nbytes / med / 1e6}), flush=True)
        return
    sets = [load_set(s) for s in specs]
    if cmd == 'hashes':
        for name, docs in sets:
            for d in docs:
                print(f"{name}\t{d['rel']}\t{doc_hash(d['obj'])}")
        return
    for name, docs in sets:
        print(f'py_jcs: set {name} ({len(docs)} docs)', file=sys.stderr)
        objs = [d['obj'] for d in docs]
        raws = [d['raw'] for d in docs]

        def hash_only():
            for o in objs:
                doc_hash(o)

        def loads_hash():
            for r in raws:
                doc_hash(json.loads(r))

        print(json.dumps(record(name, 'hash', docs, measure(hash_only, run_secs, runs))), flush=True)
        print(json.dumps(record(name, 'parse+hash', docs, measure(loads_hash, run_secs, runs))), flush=True)


if __name__ == '__main__':
    main(sys.argv[1:])
