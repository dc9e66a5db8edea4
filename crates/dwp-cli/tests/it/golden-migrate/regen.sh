#!/usr/bin/env bash
# Regenerates the migration goldens in this folder by running the upstream `migrate_v6.py`
# (with `ledger.py` and `contract_v6.py`) on OUR v5 plans (steps in tests/it/golden_migrate.rs).
#
# Usage: DWP_UPSTREAM_PACK=/path/to/deepworkplan-skill/skills/deepworkplan regen.sh
# Needs: python3, git, cargo. Writes only files in this folder; never copies upstream code.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../../.." && pwd)"
: "${DWP_UPSTREAM_PACK:?set DWP_UPSTREAM_PACK to a checkout of skills/deepworkplan}"
for f in migrate_v6.py ledger.py contract_v6.py; do
  [ -f "$DWP_UPSTREAM_PACK/shared/$f" ] || {
    echo "no shared/$f under $DWP_UPSTREAM_PACK" >&2
    exit 2
  }
done
cd "$root"
test=golden_migrate::golden_migrate_matches_upstream_when_the_pack_is_at_hand
DWP_GOLDEN_REGEN=1 cargo test -q -p dwp-cli --test it -- --ignored --exact "$test"
# A second run without DWP_GOLDEN_REGEN checks the normalisation is stable across runs.
cargo test -q -p dwp-cli --test it -- --ignored --exact "$test"
if git -C "$DWP_UPSTREAM_PACK" rev-parse HEAD >/dev/null 2>&1; then
  git -C "$DWP_UPSTREAM_PACK" rev-parse HEAD >"$here/UPSTREAM_COMMIT"
fi
echo "goldens regenerated in $here"
