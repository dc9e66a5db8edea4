#!/usr/bin/env python3
"""The v5 -> v6 migration transcript: 15 steps run with upstream migrate_v6.py (+ ledger.py)
and with `dwp migrate` (+ `dwp ledger`) in fresh folders; compares stdout, stderr, exit code
and every file under the scratch root. Normalised: the scratch root path, and the wall-clock
`ts` the ledger stamps on journal events (and the snapshot's updated_at derived from it)."""
import json, os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare

V5 = 'https://deepworkplan.com/schema/plan-manifest/v5.json'


def v5_plan(root, name, title='Migration self-test', tasks=None, manifest_name=None):
    plan = os.path.join(root, '.dwp', 'plans', name)
    gates = os.path.join(plan, 'analysis_results', 'gates')
    os.makedirs(gates)
    with open(os.path.join(plan, 'README.md'), 'w') as fh:
        fh.write('# Plan\n\n## Goal\n\nFixture plan.\n')
    for slug in ('1.task_clean.md', '2.task_broken.md', '3.task_pend.md'):
        with open(os.path.join(plan, slug), 'w') as fh:
            fh.write('# %s\n' % slug)
    with open(os.path.join(gates, 'clean.log'), 'w') as fh:
        fh.write('ok\n')
    tasks = tasks or [
        {'id': 1, 'title': 'Clean completed task',
         'locator': {'kind': 'file', 'value': '1.task_clean.md'},
         'status': 'completed', 'gates': [
             {'command': 'pnpm run test:clean', 'passes': True, 'exit_code': 0,
              'evidence': 'analysis_results/gates/clean.log'}]},
        {'id': 2, 'title': 'Broken evidence task',
         'locator': {'kind': 'file', 'value': '2.task_broken.md'},
         'status': 'completed', 'gates': [
             {'command': 'pnpm run test:broken', 'passes': True, 'exit_code': 0,
              'evidence': 'analysis_results/gates/gone.log'}]},
        {'id': 3, 'title': 'Pending task',
         'locator': {'kind': 'file', 'value': '3.task_pend.md'},
         'status': 'pending', 'gates': []}]
    manifest = {'schema': V5, 'spec_version': '5.0.0', 'name': manifest_name or name,
                'title': title, 'created_at': '2026-09-01T09:00:00Z',
                'task_count': len(tasks), 'plan_format': 'full'}
    state = {'schema': 'https://deepworkplan.com/schema/plan-state/v5.json', 'plan': name,
             'updated_at': '2026-09-02T09:00:00Z', 'status': 'in_progress',
             'completed_count': 1, 'task_count': len(tasks), 'format': 'full',
             'materialization': 'ready', 'tasks': tasks}
    with open(os.path.join(plan, 'manifest.json'), 'w') as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
    with open(os.path.join(plan, 'state.json'), 'w') as fh:
        json.dump(state, fh, indent=2, sort_keys=True)
    return plan


def setup(root):
    subprocess.run(['git', 'init', '-q', root], check=True)
    v5_plan(root, 'PLAN_migrate_one')
    v5_plan(root, 'PLAN_migrate_two')
    v5_plan(root, 'PLAN_migrate_accent', tasks=[
        {'id': 1, 'title': 'Café menu', 'status': 'pending', 'gates': []}])
    v5_plan(root, 'PLAN_migrate_torn', manifest_name='PLAN_other_name')
    v5_plan(root, 'PLAN_migrate_lossy', tasks=[
        {'id': 1, 'title': 'Mystery', 'status': 'mysterious', 'gates': []}])


P = lambda name: (lambda root: os.path.join(root, '.dwp', 'plans', name))
ONE = P('PLAN_migrate_one')
TWO = P('PLAN_migrate_two')


def step(name, helper, args):
    return {'name': name, 'helper': helper, 'args': args}


STEPS = [
    step('migrate without a preview', 'migrate_v6.py',
         lambda r: ['--plan', ONE(r), 'migrate', '--authority', 'tester']),
    step('rollback without a marker', 'migrate_v6.py',
         lambda r: ['--plan', ONE(r), 'rollback']),
    step('preview', 'migrate_v6.py', lambda r: ['--plan', ONE(r), 'preview']),
    step('migrate without --authority', 'migrate_v6.py', lambda r: ['--plan', ONE(r), 'migrate']),
    step('migrate', 'migrate_v6.py',
         lambda r: ['--plan', ONE(r), 'migrate', '--authority', 'tester']),
    step('migrate again (resumed, no-op)', 'migrate_v6.py',
         lambda r: ['--plan', ONE(r), 'migrate', '--authority', 'tester']),
    step('preview after migrating', 'migrate_v6.py', lambda r: ['--plan', ONE(r), 'preview']),
    step('post-migration v6 work (ledger append)', 'ledger.py',
         lambda r: ['--plan', ONE(r), 'append', '--type', 'observation', '--json',
                    '{"statement": "post-migration work"}', '--trust', 'asserted']),
    step('rollback refuses the extra history', 'migrate_v6.py',
         lambda r: ['--plan', ONE(r), 'rollback']),
    step('rollback --force', 'migrate_v6.py', lambda r: ['--plan', ONE(r), 'rollback', '--force']),
    step('preview after rollback', 'migrate_v6.py', lambda r: ['--plan', ONE(r), 'preview']),
    step('preview with a non-ASCII title', 'migrate_v6.py',
         lambda r: ['--plan', P('PLAN_migrate_accent')(r), 'preview']),
    step('preview of a torn identity', 'migrate_v6.py',
         lambda r: ['--plan', P('PLAN_migrate_torn')(r), 'preview']),
    step('preview of a lossy status', 'migrate_v6.py',
         lambda r: ['--plan', P('PLAN_migrate_lossy')(r), 'preview']),
    step('preview a second plan', 'migrate_v6.py',
         lambda r: ['--plan', TWO(r), 'preview']),
]

if __name__ == '__main__':
    n = compare(STEPS, setup, 'migrate', verbose='-q' not in sys.argv)
    sys.exit(0 if n == len(STEPS) else 1)
