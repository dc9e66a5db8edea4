#!/usr/bin/env bash
# The Cookwala CLI on hostile shapes at n and 2n (run by bench/complexity.sh, which builds the
# release binary and sets ROOT, BIN, WORK and REPS). The shapes come from gen_cookwala.py:
#
#   emoji levels         issue 22: [{"k":…,"😀":i}] per level (the parser allows 255 of them)
#   out-of-order levels  objects whose keys arrive out of UTF-16 order, 4 KiB per level
#   wide high keys       one object of keys that all need the UTF-16 sort
#   unknown ops          a recipe's nodes and a device's ops the vocabulary does not know
#   heated steps, limits every step heated, against a pack of as many limits (by op, one naming
#                        every op, by medium alone): the walk was steps x limits
#   signed doc           a 256-key set and a signed document of n bytes
set -euo pipefail
source "$ROOT/bench/complexity/lib.sh"
CW="$BIN/cookwala"
GEN="python3 $ROOT/bench/complexity/gen_cookwala.py"
SCHEMAS="${SCHEMAS:-$ROOT/../shared/standards/cookwala/schemas}"
NOW=2026-10-05T00:00:00Z

gen() { $GEN "$1" "$2" "$WORK/$1-$2.json"; printf '%s' "$WORK/$1-$2.json"; }

# `pair LABEL SHAPE N CMD...`: CMD with {} replaced by the shape's file at N, then at 2N.
pair() {
    local label="$1" shape="$2" n="$3"
    shift 3
    local small big
    small=$(gen "$shape" "$n")
    big=$(gen "$shape" $((2 * n)))
    local t1 t2
    t1=$(measure "${@//\{\}/$small}")
    t2=$(measure "${@//\{\}/$big}")
    row "$label" "$t1" "$t2"
}

header "cookwala CLI (n -> 2n)"
pair "hash: emoji key per level (127 -> 254 levels)" emoji_levels 127 "$CW" hash {}
pair "canon: emoji key per level (127 -> 254 levels)" emoji_levels 127 "$CW" canon {}
pair "canon: out-of-order objects (255 -> 510 levels)" out_of_order_levels 255 "$CW" canon {}
pair "hash: out-of-order objects (255 -> 510 levels)" out_of_order_levels 255 "$CW" hash {}
pair "canon: wide object, high keys (8 -> 16 MB)" wide_high_keys 8000000 "$CW" canon {}
pair "hash: wide object, high keys (8 -> 16 MB)" wide_high_keys 8000000 "$CW" hash {}
pair "validate: recipe, unknown ops (50k -> 100k nodes)" unknown_op_recipe 50000 \
    "$CW" validate --kind Recipe {}
if [[ -d "$SCHEMAS" ]]; then
    pair "validate --schemas: recipe (50k -> 100k nodes)" unknown_op_recipe 50000 \
        "$CW" validate --kind Recipe --schemas "$SCHEMAS" {}
fi

# The dry run needs two documents of the same size: the recipe's and the device's unknown ops.
for n in 50000 100000; do
    $GEN unknown_op_recipe "$n" "$WORK/recipe-$n.json"
    $GEN unknown_op_device "$n" "$WORK/device-$n.json"
done
dry=("$CW" dry-run --now "$NOW" --recipe)
t1=$(measure "${dry[@]}" "$WORK/recipe-50000.json" --device "$WORK/device-50000.json")
t2=$(measure "${dry[@]}" "$WORK/recipe-100000.json" --device "$WORK/device-100000.json")
row "dry-run: unknown ops x device ops (50k -> 100k)" "$t1" "$t2"

# The dry run against a pack as large as the recipe (`--limits`, from the CLI's input).
for n in 20000 40000; do
    $GEN heated_recipe "$n" "$WORK/heated-$n.json"
    $GEN limits_pack "$n" "$WORK/pack-$n.json"
    $GEN unknown_op_device "$n" "$WORK/hdevice-$n.json"
done
lim() { measure "$CW" dry-run --now "$NOW" --recipe "$WORK/heated-$1.json" \
    --device "$WORK/hdevice-$1.json" --limits "$WORK/pack-$1.json"; }
row "dry-run --limits: heated steps x limits (20k -> 40k)" "$(lim 20000)" "$(lim 40000)"

# Verify: the signer's key is the last of 256 (the most a set holds).
keys="$WORK/keys"
mkdir -p "$keys"
for i in $(seq 0 255); do
    "$CW" keygen --kid "did:web:example.org#key-$i" --out "$keys" >/dev/null
done
python3 - "$keys" >"$WORK/keyset.json" <<'PY'
import glob, json, sys
records = []
for path in sorted(glob.glob(sys.argv[1] + "/*.pub.json"), key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0])):
    records += json.load(open(path))
print(json.dumps(records))
PY
signer=$(ls "$keys"/*key-255*.key.json)
for n in 4000000 8000000; do
    doc=$(gen big_doc "$n")
    "$CW" sign --key "$signer" "$doc" >"$WORK/signed-$n.json"
done
ver=("$CW" verify --keys "$WORK/keyset.json")
t1=$(measure "${ver[@]}" "$WORK/signed-4000000.json")
t2=$(measure "${ver[@]}" "$WORK/signed-8000000.json")
row "verify: 256-key set, signed doc (4 -> 8 MB)" "$t1" "$t2"
