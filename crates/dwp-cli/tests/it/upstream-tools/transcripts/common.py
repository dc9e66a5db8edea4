"""Shared helpers for the upstream-vs-dwp transcripts (no upstream code here)."""
import json, os, re, subprocess, sys, shutil, tempfile

PACK = os.environ.get('DWP_UPSTREAM_PACK', '/work/upstream/dwp-pack')
DWP = os.environ.get('DWP_BIN') or os.path.abspath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '../../../../../../target/debug/dwp'))

# helper script -> our subcommand
HELPERS = {'ledger.py': ['ledger'], 'migrate_v6.py': ['migrate'],
           'context_manifest.py': ['context'], 'outcomes.py': ['outcomes'],
           'views.py': ['views'], 'scheduler.py': ['scheduler'],
           'contract_v6.py': ['contract'], 'resources.py': ['resources']}

FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'


def env(side='ours'):
    # Both tools run under the same frozen wall clock (libfaketime), so event timestamps and
    # every digest over them are comparable without normalisation; monotonic time is real.
    e = dict(os.environ, PYTHONDONTWRITEBYTECODE='1',
             GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@example.org',
             GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@example.org',
             GIT_AUTHOR_DATE='2026-10-01T12:00:00Z', GIT_COMMITTER_DATE='2026-10-01T12:00:00Z')
    if os.environ.get('DWP_NO_FAKETIME') != '1':
        # dwp: libfaketime, applied to the dwp process only (never to git or gate children);
        # python: a sitecustomize that freezes time.time/gmtime (libfaketime breaks
        # subprocess.run(timeout=...) in CPython with EINVAL)
        if side == 'ours':
            e.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME='2026-10-01 12:00:00',
                     FAKETIME_DONT_FAKE_MONOTONIC='1', FAKETIME_ONLY_CMDS='dwp')
        else:
            e.update(DWP_FAKE_EPOCH='1790856000',
                     PYTHONPATH=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             'fakeclock'))
    return e


TS = re.compile(r'\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z')


def cmd(side, helper, args):
    if side == 'upstream':
        return ['python3', os.path.join(PACK, 'shared', helper)] + args
    return [DWP] + HELPERS[helper] + args


def norm(text, root):
    text = text.replace(os.path.realpath(root), '<ROOT>').replace(root, '<ROOT>')
    if os.environ.get('DWP_NO_FAKETIME') == '1':
        text = TS.sub('<TS>', text)
    return text


def snapshot(root):
    """Every file under root (relative path -> normalised text or digest)."""
    out = {}
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ('.git', '.ledger.lock'))
        for name in sorted(files):
            full = os.path.join(base, name)
            rel = os.path.relpath(full, root)
            with open(full, 'rb') as fh:
                raw = fh.read()
            try:
                out[rel] = norm(raw.decode('utf-8'), root)
            except UnicodeDecodeError:
                out[rel] = '<binary %d bytes>' % len(raw)
    return out


def run(side, root, step):
    helper, args = step['helper'], step['args'](root)
    if 'before' in step:
        step['before'](side, root)
    proc = subprocess.run(cmd(side, helper, args), cwd=root, capture_output=True,
                          env=env(side), timeout=120)
    return {'rc': proc.returncode,
            'stdout': norm(proc.stdout.decode('utf-8', 'replace'), root),
            'stderr': norm(proc.stderr.decode('utf-8', 'replace'), root),
            'files': snapshot(root)}


def compare(steps, setup, label, verbose=True):
    """Runs every step with upstream, then with dwp, each in a fresh scratch root at the SAME
    absolute path (so paths recorded inside files and the digests over them are comparable)."""
    root = os.path.join(tempfile.gettempdir(), 'dwp-transcript-%s' % label)
    results = {}
    for side in ('upstream', 'ours'):
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        setup(root)
        results[side] = [run(side, root, step) for step in steps]
    shutil.rmtree(root, ignore_errors=True)
    ok = 0
    for i, step in enumerate(steps, 1):
        a, b = results['upstream'][i - 1], results['ours'][i - 1]
        diffs = [k for k in ('rc', 'stdout', 'stderr') if a[k] != b[k]]
        fa, fb = a['files'], b['files']
        for path in sorted(set(fa) | set(fb)):
            if fa.get(path) != fb.get(path):
                diffs.append('file:' + path)
        if not diffs:
            ok += 1
            if verbose:
                print('%2d PASS %s' % (i, step['name']))
        else:
            print('%2d FAIL %s: %s' % (i, step['name'], ', '.join(diffs)))
            if verbose:
                for k in ('rc', 'stdout', 'stderr'):
                    if a[k] != b[k]:
                        print('   upstream %s: %r' % (k, a[k][:800]))
                        print('   ours     %s: %r' % (k, b[k][:800]))
                for d in diffs:
                    if d.startswith('file:'):
                        p = d[5:]
                        x, y = fa.get(p) or '<absent>', fb.get(p) or '<absent>'
                        j = next((n for n in range(min(len(x), len(y))) if x[n] != y[n]),
                                 min(len(x), len(y)))
                        print('   %s differs at %d: upstream %r | ours %r'
                              % (p, j, x[max(0, j - 150):j + 250], y[max(0, j - 150):j + 250]))
    print('%s: %d/%d steps identical' % (label, ok, len(steps)))
    return ok
