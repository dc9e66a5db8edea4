#!/usr/bin/env python3
"""The 42-step end-to-end transcript: contract, materialize, gates, sign-off, scheduler, views,
outcomes, amend, export, roll, torn tail, repair - each step run with the upstream helpers and
with `dwp` in fresh folders; compares stdout, stderr, exit code and every file written.
Normalised: the scratch root path only (both tools run under the same frozen clock, see
common.env). The gate fingerprint hashes the interpreter/toolchain by design, so it is
replaced by <FP> in outputs and evidence.jsonl."""
import json, os, re, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from common import compare

PLAN = 'PLAN_001_demo_plan'
FP = re.compile(r'(fingerprint[" :]+)[0-9a-f]{12,64}')
_norm = common.norm


EVIDENCE_DIGEST = re.compile(r'("evidence.jsonl": ")[0-9a-f]{64}')


def norm(text, root):
    # evidence.jsonl carries the fingerprints, so its digest in EXPORT_MANIFEST.json differs too
    return EVIDENCE_DIGEST.sub(r'\1<DIGEST-OF-FINGERPRINTS>', FP.sub(r'\1<FP>', _norm(text, root)))


common.norm = norm


def contract():
    crit = lambda i, ev, chk: {'id': i, 'statement': 's', 'observable_check': chk,
                               'accepted_evidence': ev}
    return {
        'schema': 'https://deepworkplan.com/schema/plan-contract/v6.json',
        'spec_version': '6.0.0', 'plan': PLAN, 'revision': 1,
        'created_at': '2026-10-01T09:00:00Z', 'title': 'Demo plan',
        'outcome': {'statement': 'demo', 'success_definition': 'gates pass',
                    'out_of_scope': []},
        'acceptance': {'criteria': [crit('AC-pass', ['observed'], 'true'),
                                    crit('AC-fail', ['observed'], 'false'),
                                    crit('AC-review', ['asserted'], 'a human reads it')]},
        'invariants': [],
        'scope': {'allowed_paths': ['src.txt'],
                  'allowed_command_classes': ['true', 'false', 'sh'],
                  'forbidden_operations': ['force-push']},
        'authorization': {'mechanism': 'plan_authorship', 'authority': 'dev',
                          'timestamp': '2026-10-01T09:00:00Z', 'boundaries': 'demo',
                          'consent_checkpoints': []},
        'permissions': {'granted': ['gate_command_exec'], 'not_granted': ['network_access']},
        'dependencies': [],
        'resource_envelope': {'limits': [{'id': 'wall_h', 'limit': 1, 'unit': 'hours',
                                          'enforcement': 'advisory'}]},
        'tasks': [
            {'id': 'T-one', 'title': 'One', 'prerequisites': [], 'touched_surface': ['src.txt'],
             'gate_intent': [{'criterion': 'AC-pass', 'check': 'true'},
                             {'criterion': 'AC-review', 'check': 'read'}]},
            {'id': 'T-two', 'title': 'Two', 'prerequisites': ['T-one'],
             'touched_surface': ['src.txt'],
             'gate_intent': [{'criterion': 'AC-fail', 'check': 'false'}]}]}


def setup(root):
    e = common.env()
    subprocess.run(['git', 'init', '-q', root], check=True, env=e)
    with open(os.path.join(root, 'src.txt'), 'w') as fh:
        fh.write('v1\n')
    with open(os.path.join(root, '.gitignore'), 'w') as fh:
        fh.write('.dwp/\n*.json\n*.md\nexport/\n')
    subprocess.run(['git', '-C', root, 'add', '.'], check=True, env=e)
    subprocess.run(['git', '-C', root, 'commit', '-q', '-m', 'init'], check=True, env=e)
    plan = os.path.join(root, '.dwp', 'plans', PLAN)
    os.makedirs(plan)
    with open(os.path.join(plan, 'README.md'), 'w') as fh:
        fh.write('# Demo plan\n\nOne then two.\n')
    c = contract()
    with open(os.path.join(root, 'contract.json'), 'w') as fh:
        json.dump(c, fh, indent=2, sort_keys=True)
    c2 = json.loads(json.dumps(c))
    c2['acceptance']['criteria'][1]['observable_check'] = 'sh -c "exit 0"'
    c2['tasks'][1]['gate_intent'][0]['check'] = 'sh -c "exit 0"'
    with open(os.path.join(root, 'contract2.json'), 'w') as fh:
        json.dump(c2, fh, indent=2, sort_keys=True)
    with open(os.path.join(root, 'note.md'), 'w') as fh:
        fh.write('I, dev, amend.\n')
    # the sign-off artifact lives inside the plan: for an artifact outside the plan folder
    # upstream's export writes to <dest>/../../../<file> (outside the destination); dwp copies
    # it under <dest>/external/ instead - a deliberate difference, not compared here
    with open(os.path.join(plan, 'review.txt'), 'w') as fh:
        fh.write('reviewed: fine\n')


def pl(root):
    return os.path.join(root, '.dwp', 'plans', PLAN)


def L(name, *args):
    return {'name': name, 'helper': 'ledger.py',
            'args': lambda r, a=args: ['--plan', pl(r)] + [x.replace('@', r) for x in a]}


def H(name, helper, *args, plan=True, before=None):
    s = {'name': name, 'helper': helper,
         'args': lambda r, a=args: (['--plan', pl(r)] if plan else []) +
         [x.replace('@', r).replace('%PLAN%', pl(r)) for x in a]}
    if before:
        s['before'] = before
    return s


def S(name, *args):
    return {'name': name, 'helper': 'scheduler.py',
            'args': lambda r, a=args: [a[0], pl(r)] + list(a[1:])}


def torn(side, root):
    with open(os.path.join(pl(root), 'journal.ndjson'), 'ab') as fh:
        fh.write(b'{"schema": "https://deepworkplan.com/schema/journa')


STEPS = [
    H('contract compute-id', 'contract_v6.py', 'compute-id', '@/contract.json', plan=False),
    H('contract validate-contract', 'contract_v6.py', 'validate-contract', '@/contract.json',
      plan=False),
    L('materialize', 'materialize', '--contract', '@/contract.json', '--authority', 'dev'),
    L('materialize again (resumed)', 'materialize', '--contract', '@/contract.json',
      '--authority', 'dev'),
    S('scheduler ready', 'ready'),
    S('scheduler authorize select T-two (prerequisite open)', 'authorize', '--json',
      '{"type": "select", "task": "T-two"}'),
    S('scheduler authorize select T-one', 'authorize', '--json',
      '{"type": "select", "task": "T-one"}'),
    L('start T-one', 'start', '--task', 'T-one'),
    L('gate T-one AC-pass', 'gate', '--task', 'T-one', '--criterion', 'AC-pass', '--json',
      '"true"'),
    L('gate T-one AC-pass again (reused)', 'gate', '--task', 'T-one', '--criterion', 'AC-pass',
      '--json', '"true"'),
    L('reuse', 'reuse', '--task', 'T-one', '--criterion', 'AC-pass', '--json', '"true"'),
    L('complete T-one refused', 'complete', '--task', 'T-one'),
    L('signoff AC-review', 'signoff', '--criterion', 'AC-review', '--evidence-path',
      'review.txt', '--authority', 'reviewer'),
    L('complete T-one', 'complete', '--task', 'T-one'),
    S('scheduler ready after T-one', 'ready'),
    L('start T-two', 'start', '--task', 'T-two'),
    L('gate T-two AC-fail (argv, exits 1)', 'gate', '--task', 'T-two', '--criterion', 'AC-fail',
      '--json', '["false"]'),
    L('complete T-two refused', 'complete', '--task', 'T-two'),
    L('append an asserted observation', 'append', '--type', 'observation', '--trust',
      'asserted', '--json', '{"statement": "T-two fails as expected"}'),
    H('views render (default views)', 'views.py', 'render'),
    H('views render again (no-op)', 'views.py', 'render'),
    H('views render --all', 'views.py', 'render', '--all'),
    H('outcomes closure', 'outcomes.py', 'closure'),
    H('outcomes closure --task T-one', 'outcomes.py', 'closure', '--task', 'T-one'),
    H('outcomes receipt (stdout)', 'outcomes.py', 'receipt'),
    H('outcomes receipt --out', 'outcomes.py', 'receipt', '--out', '@/receipt.json'),
    H('outcomes review --state clean', 'outcomes.py', 'review', '--state', 'clean'),
    L('amend to revision 2', 'amend', '--contract', '@/contract2.json', '--authority', 'dev',
      '--note', 'T-two check relaxed', '--human-note', '@/note.md'),
    L('inspect after amend', 'inspect'),
    H('views render --all after amend (refresh)', 'views.py', 'render', '--all'),
    H('outcomes closure after amend', 'outcomes.py', 'closure'),
    S('scheduler ready after amend', 'ready'),
    L('project', 'project'),
    L('export', 'export', '--dest', '@/export'),
    L('roll', 'roll'),
    L('append after roll (seq continues)', 'append', '--type', 'observation', '--trust',
      'asserted', '--json', '{"statement": "after the roll"}'),
    L('inspect after roll', 'inspect'),
    dict(L('inspect a torn tail', 'inspect'), before=torn),
    S('scheduler ready refuses a torn tail', 'ready'),
    L('project repairs the torn tail', 'project'),
    L('inspect after repair', 'inspect'),
    H('validate-journal against revision 2', 'contract_v6.py', 'validate-journal',
      '%PLAN%/journal.ndjson', '--contract', '%PLAN%/contracts/contract.r2.json', plan=False),
]

if __name__ == '__main__':
    n = compare(STEPS, setup, 'e2e', verbose='-q' not in sys.argv)
    sys.exit(0 if n == len(STEPS) else 1)
