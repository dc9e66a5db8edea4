#!/usr/bin/env bash
# Builds $BATS_ROOT/ours: the same tests/ as $BATS_ROOT/upstream (a checkout layout holding
# tests/*.bats, tests/fixtures/ and skills/deepworkplan/shared/ = the upstream pack), with
# skills/deepworkplan/shared/ holding shims named like each upstream helper that exec the
# matching `dwp` subcommand. No upstream code is in a shim: when a test's own scaffolding
# imports a helper as a Python module, the shim loads the upstream module from the pack (such
# tests are not counted as portable).
set -euo pipefail
tools="$(cd "$(dirname "$0")" && pwd)"
: "${BATS_ROOT:?set BATS_ROOT to the folder holding upstream/ (tests + skills/deepworkplan)}"
here="$BATS_ROOT"
: "${DWP_BIN:=$(cd "$tools/../../../../../.." && pwd)/target/debug/dwp}"
: "${DWP_UPSTREAM_PACK:?set DWP_UPSTREAM_PACK to the upstream skills/deepworkplan folder}"
rm -rf "$here/ours"; mkdir -p "$here/ours/skills/deepworkplan/shared"
cp -r "$here/upstream/tests" "$here/ours/tests"
# Addon descriptors: upstream reads <pack>/addons beside shared/; dwp reads DWP_ADDONS_DIR.
addons="$here/ours/skills/deepworkplan/addons"
if [ -d "$DWP_UPSTREAM_PACK/addons" ]; then cp -r "$DWP_UPSTREAM_PACK/addons" "$addons"; fi
# Helpers dwp does not reimplement (the addon registry writer): the shim runs the upstream
# file, so a test using one only as scaffolding (`config.py enable agentkit`) can still drive
# dwp; tests whose subject is such a helper test upstream, not dwp, and are not counted.
for name in config.py; do
  cat > "$here/ours/skills/deepworkplan/shared/$name" <<PY
#!/usr/bin/env python3
import os, sys
sys.dont_write_bytecode = True
_up = os.path.join('$DWP_UPSTREAM_PACK', 'shared', '$name')
if __name__ == '__main__':
    os.execv(sys.executable, [sys.executable, _up] + sys.argv[1:])
else:
    import importlib.util
    _spec = importlib.util.spec_from_file_location(__name__, _up)
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    globals().update(vars(_mod))
PY
  chmod +x "$here/ours/skills/deepworkplan/shared/$name"
done
for pair in ledger.py:ledger migrate_v6.py:migrate context_manifest.py:context \
    outcomes.py:outcomes views.py:views scheduler.py:scheduler contract_v6.py:contract \
    resources.py:resources; do
  name="${pair%%:*}"; group="${pair##*:}"
  cat > "$here/ours/skills/deepworkplan/shared/$name" <<PY
#!/usr/bin/env python3
import os, sys
sys.dont_write_bytecode = True
if __name__ == '__main__':
    os.environ['DWP_ADDONS_DIR'] = '$addons'
    os.execv('$DWP_BIN', ['$DWP_BIN', '$group'] + sys.argv[1:])
else:
    import importlib.util
    _spec = importlib.util.spec_from_file_location(
        __name__, os.path.join('$DWP_UPSTREAM_PACK', 'shared', '$name'))
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    globals().update(vars(_mod))
PY
  chmod +x "$here/ours/skills/deepworkplan/shared/$name"
done
echo "built $here/ours (dwp: $DWP_BIN)"
