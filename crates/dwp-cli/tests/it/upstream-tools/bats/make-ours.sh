#!/usr/bin/env bash
# Builds $BATS_ROOT/ours: the same tests/ as $BATS_ROOT/upstream (a checkout layout holding
# tests/*.bats and tests/fixtures/), with skills/deepworkplan/ a copy of the upstream skill
# folder ($DWP_UPSTREAM_PACK) on which `dwp skill install` has put its launchers: the way a
# user of the skill switches to dwp. Helpers dwp does not cover (config.py, benchmark.py, …)
# keep running their originals; a test whose scaffolding imports a helper as a Python module
# gets the original through the launcher (such tests are not counted as portable).
set -euo pipefail
tools="$(cd "$(dirname "$0")" && pwd)"
: "${BATS_ROOT:?set BATS_ROOT to the folder holding upstream/ (tests + skills/deepworkplan)}"
here="$BATS_ROOT"
: "${DWP_BIN:=$(cd "$tools/../../../../../.." && pwd)/target/debug/dwp}"
: "${DWP_UPSTREAM_PACK:?set DWP_UPSTREAM_PACK to the upstream skills/deepworkplan folder}"
if [ ! -f "$DWP_UPSTREAM_PACK/SKILL.md" ]; then
  echo "make-ours: $DWP_UPSTREAM_PACK has no SKILL.md; dwp skill install needs the skill" \
       "folder as released (skills/deepworkplan/ with SKILL.md, shared/, addons/)" >&2
  exit 2
fi
rm -rf "$here/ours"; mkdir -p "$here/ours/skills"
cp -r "$here/upstream/tests" "$here/ours/tests"
cp -r "$DWP_UPSTREAM_PACK" "$here/ours/skills/deepworkplan"
"$DWP_BIN" skill install --skill-dir "$here/ours/skills/deepworkplan" --dwp "$DWP_BIN"
echo "built $here/ours (dwp: $DWP_BIN)"
