#!/usr/bin/env bash
# Regenerates the interop goldens in this folder by running the upstream Python helpers on OUR
# scenario (tests/it/golden.rs: our contract, our scratch git repository, our commands).
#
# Usage: DWP_UPSTREAM_PACK=/path/to/deepworkplan-skill/skills/deepworkplan regen.sh
# Needs: python3, git, cargo. Writes only files in this folder; never copies upstream code.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../../.." && pwd)"
: "${DWP_UPSTREAM_PACK:?set DWP_UPSTREAM_PACK to a checkout of skills/deepworkplan}"
[ -f "$DWP_UPSTREAM_PACK/shared/ledger.py" ] || {
  echo "no shared/ledger.py under $DWP_UPSTREAM_PACK" >&2
  exit 2
}
cd "$root"
test=golden::goldens_match_upstream_when_the_pack_is_at_hand
DWP_GOLDEN_REGEN=1 cargo test -q -p dwp-cli --test it -- --ignored --exact "$test"
# A second run without DWP_GOLDEN_REGEN checks the normalisation is stable across runs.
cargo test -q -p dwp-cli --test it -- --ignored --exact "$test"
# Record the upstream commit when the pack is a git checkout (else keep the recorded one).
if git -C "$DWP_UPSTREAM_PACK" rev-parse HEAD >/dev/null 2>&1; then
  git -C "$DWP_UPSTREAM_PACK" rev-parse HEAD >"$here/UPSTREAM_COMMIT"
fi
echo "goldens regenerated in $here"
