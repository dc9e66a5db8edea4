#!/usr/bin/env python3
"""Times the upstream Python dry run (cookwala_samples.simulator.dry_run, PyPI cookwala-samples
0.3.0) over the 32 cases of its bundled data: 4 recipes x 4 devices x humanPresent.

Usage:
  py_dryrun.py bundle-path                   # prints the path of the package's bundle.json
  py_dryrun.py run [--runs N] [--run-secs S] [--smoke]
                                             # JSON records shaped like cw-bench's
  py_dryrun.py make-batch OUT.ndjson REPEAT  # the 32 cases inline (recipe, capabilities,
                                             # limits, ...), REPEAT times: a batch for both sides
  py_dryrun.py make-distinct OUT.ndjson LINES STANDARD.json GENDIR
                                             # LINES cases, every document distinct: the
                                             # standard's dryrun vectors, GENDIR's generated
                                             # recipes on each bundle device and the bundle's
                                             # pairs, in turn, each recipe and device given its
                                             # own id; written as json.dumps writes (ASCII)
  py_dryrun.py batch FILE.ndjson             # what `cookwala dry-run --batch` does, upstream:
                                             # json.loads + dry_run per line, one summary line out

Every case is checked against the bundle's expected result before timing.
"""
import json
import os
import sys

import cookwala_samples
from cookwala_samples.data import load_bundle
from cookwala_samples.simulator import dry_run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_jcs import measure, median  # noqa: E402


def make_batch(out, repeat):
    b = load_bundle()
    lines = []
    for e in b['expected']['dryRuns']:
        lines.append(json.dumps({
            'recipe': b['recipes'][e['recipe']], 'capabilities': b['devices'][e['device']],
            'limits': b['safetyLimits'], 'humanPresent': e['humanPresent'], 'allowModel': True,
            'now': b['now'],
        }))
    with open(out, 'w') as fh:
        for _ in range(repeat):
            for line in lines:
                fh.write(line + '\n')


def make_distinct(out, lines, standard, gendir):
    import glob
    b = load_bundle()
    cases = []
    with open(standard) as fh:
        for c in json.load(fh):
            case = dict(c['input'])
            case.setdefault('now', b['now'])
            cases.append(case)
    for path in sorted(glob.glob(os.path.join(gendir, '*.json'))):
        with open(path) as fh:
            recipe = json.load(fh)
        for device in b['devices'].values():
            cases.append({'recipe': recipe, 'capabilities': device, 'limits': b['safetyLimits'],
                          'humanPresent': True, 'allowModel': True, 'now': b['now']})
    for e in b['expected']['dryRuns']:
        cases.append({'recipe': b['recipes'][e['recipe']], 'capabilities': b['devices'][e['device']],
                      'limits': b['safetyLimits'], 'humanPresent': e['humanPresent'], 'allowModel': True,
                      'now': b['now']})
    texts = [json.dumps(c) for c in cases]
    with open(out, 'w') as fh:
        for n in range(lines):
            case = json.loads(texts[n % len(texts)])
            case['recipe']['id'] = f'case-{n}'
            case['capabilities']['id'] = f'device-{n}'
            fh.write(json.dumps(case) + '\n')


def batch(path):
    out = sys.stdout
    with open(path, 'rb') as fh:
        for raw in fh:
            if not raw.strip():
                continue
            c = json.loads(raw)
            got = dry_run(c['recipe'], c['capabilities'], c.get('humanPresent', False),
                          c.get('allowModel', True), c.get('limits'), c['now'])
            refusal = got.get('refusal') or {}
            summary = {'state': got['state'], 'reason': refusal.get('reason'), 'node': refusal.get('node'),
                       'plan': [{'node': p['node'], 'by': p['by'], 'verifiedBy': p['verifiedBy']}
                                for p in got['plan']]}
            out.write(json.dumps(summary, sort_keys=True, separators=(',', ':'), ensure_ascii=False) + '\n')


def main(argv):
    if not argv or argv[0] not in ('bundle-path', 'run', 'make-batch', 'make-distinct', 'batch'):
        sys.exit(__doc__)
    if argv[0] == 'make-distinct':
        make_distinct(argv[1], int(argv[2]), argv[3], argv[4])
        return
    if argv[0] == 'make-batch':
        make_batch(argv[1], int(argv[2]))
        return
    if argv[0] == 'batch':
        batch(argv[1])
        return
    if argv[0] == 'bundle-path':
        print(os.path.join(os.path.dirname(cookwala_samples.__file__), 'data', 'bundle.json'))
        return
    runs, run_secs = 5, 0.3
    it = iter(argv[1:])
    for a in it:
        if a == '--runs':
            runs = int(next(it))
        elif a == '--run-secs':
            run_secs = float(next(it))
        elif a == '--smoke':
            runs, run_secs = 1, 0.0
    b = load_bundle()
    cases = []
    for e in b['expected']['dryRuns']:
        recipe, device = b['recipes'][e['recipe']], b['devices'][e['device']]
        got = dry_run(recipe, device, e['humanPresent'], True, b['safetyLimits'], b['now'])
        plan = [[p['node'], p['by'], p['verifiedBy']] for p in got['plan']]
        reason = (got.get('refusal') or {}).get('reason')
        if (got['state'], reason, plan) != (e['state'], e['reason'], e['plan']):
            sys.exit(f"py_dryrun: {e['recipe']} on {e['device']} differs from the bundle")
        cases.append((recipe, device, e['humanPresent']))

    def all_cases():
        for recipe, device, human in cases:
            dry_run(recipe, device, human, True, b['safetyLimits'], b['now'])

    iters, per = measure(all_cases, run_secs, runs)
    med = median(per)
    print(json.dumps({'set': 'bundle-32', 'impl': 'python-ref', 'op': 'dry-run', 'docs': len(cases), 'bytes': 0,
                      'iters': iters, 'runs': len(per), 'median_s': med, 'min_s': per[0], 'max_s': per[-1],
                      'docs_per_s': len(cases) / med, 'mb_per_s': 0.0}), flush=True)


if __name__ == '__main__':
    main(sys.argv[1:])
