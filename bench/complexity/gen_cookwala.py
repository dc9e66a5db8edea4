"""Hostile shapes for bench/complexity/cookwala.sh: `gen_cookwala.py SHAPE N OUT`."""
import json
import sys

shape, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def emoji_levels(levels):
    # Issue 22's reproduction: an array holding an object with an emoji key, per level.
    x = 1
    for i in range(levels):
        x = [{"k%d" % i: x, "\U0001F600": i}]
    return json.dumps({"doc": {"d": x}}, ensure_ascii=False)


def out_of_order_levels(levels, leaf):
    # Objects whose keys arrive out of UTF-16 order at every level, each with `leaf` bytes.
    text = '"end"'
    for i in range(levels):
        text = '{"\ue000":"%s","\U0001F600":%s}' % ("x" * leaf, text)
    return text


def wide_high_keys(size):
    members, i, total = [], 0, 0
    while total < size:
        high = "\ue000" if i % 2 else "\U00010000"
        m = '"%s%s%d":%d' % ("\U0001F600" * 16, high, i, i)
        members.append(m)
        total += len(m.encode()) + 1
        i += 1
    return "{" + ",".join(members) + "}"


def unknown_op_recipe(nodes):
    return json.dumps({
        "core": "0.2.1", "kind": "Recipe", "id": "hostile", "revision": 1,
        "process": {"nodes": [{"id": "n%d" % i, "op": "x-op.%d" % i} for i in reversed(range(nodes))]},
    })


def unknown_op_device(nodes):
    return json.dumps({"kind": "Capabilities", "capabilities": {"ops": [{"op": "x-op.%d" % i} for i in range(nodes)]}})


def heated_recipe(nodes):
    return json.dumps({
        "core": "0.2.1", "kind": "Recipe", "id": "hostile", "revision": 1,
        "process": {"nodes": [{"id": "n%d" % i, "op": "x-op.%d" % i, "params": {"tempC": 100}}
                              for i in range(nodes)]},
    })


def limits_pack(nodes):
    """A limit per op (in the steps' reverse order), one naming every op, limits by medium alone."""
    limits = [{"id": "l%d" % i, "kind": "max_temp", "unit": "degC", "max": 300,
               "appliesTo": {"ops": ["x-op.%d" % i]}} for i in reversed(range(nodes))]
    limits.append({"id": "every", "kind": "max_temp", "unit": "degC", "max": 400,
                   "appliesTo": {"ops": ["x-op.%d" % i for i in range(nodes)]}})
    limits += [{"id": "m%d" % i, "kind": "max_temp", "unit": "degC", "max": 1,
                "appliesTo": {"medium": "oil"}} for i in range(nodes)]
    return json.dumps({"kind": "SafetyLimits", "limits": limits})


def big_doc(size):
    return json.dumps({"kind": "Recall", "id": "rc-1", "x-data": ["\U0001F600 %d" % i for i in range(size // 12)]},
                      ensure_ascii=False)


text = {
    "emoji_levels": lambda: emoji_levels(n),
    "out_of_order_levels": lambda: out_of_order_levels(n, 4096),
    "wide_high_keys": lambda: wide_high_keys(n),
    "unknown_op_recipe": lambda: unknown_op_recipe(n),
    "unknown_op_device": lambda: unknown_op_device(n),
    "big_doc": lambda: big_doc(n),
    "heated_recipe": lambda: heated_recipe(n),
    "limits_pack": lambda: limits_pack(n),
}[shape]()
with open(out, "w", encoding="utf-8") as f:
    f.write(text)
