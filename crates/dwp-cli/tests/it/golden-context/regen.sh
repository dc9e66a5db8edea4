#!/usr/bin/env bash
# Regenerates the context goldens in this folder by running the upstream `context_manifest.py`
# (with `ledger.py`, `contract_v6.py`, `outcomes.py` and `scheduler.py`) on OUR plan (built
# by dwp; steps in tests/it/golden_context.rs).
#
# Usage: DWP_UPSTREAM_PACK=/path/to/deepworkplan-skill/skills/deepworkplan regen.sh
# Needs: python3, git, cargo. Writes only files in this folder; never copies upstream code.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../../.." && pwd)"
: "${DWP_UPSTREAM_PACK:?set DWP_UPSTREAM_PACK to a checkout of skills/deepworkplan}"
for f in context_manifest.py ledger.py contract_v6.py outcomes.py scheduler.py; do
  [ -f "$DWP_UPSTREAM_PACK/shared/$f" ] || {
    echo "no shared/$f under $DWP_UPSTREAM_PACK" >&2
    exit 2
  }
done
cd "$root"
test=golden_context::golden_context_matches_upstream_when_the_pack_is_at_hand
DWP_GOLDEN_REGEN=1 cargo test -q -p dwp-cli --test it -- --ignored --exact "$test"
# A second run without DWP_GOLDEN_REGEN checks the normalisation is stable across runs.
cargo test -q -p dwp-cli --test it -- --ignored --exact "$test"
if git -C "$DWP_UPSTREAM_PACK" rev-parse HEAD >/dev/null 2>&1; then
  git -C "$DWP_UPSTREAM_PACK" rev-parse HEAD >"$here/UPSTREAM_COMMIT"
fi
echo "goldens regenerated in $here"
