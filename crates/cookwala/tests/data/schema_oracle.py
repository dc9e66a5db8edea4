"""Test oracle: validates documents against the standard's JSON Schemas (draft 2020-12, offline).

Reads {"schemas": DIR, "cases": [{"kind": K, "doc": D}, ...]} on stdin and prints one JSON line:
a list of booleans (valid or not), in order. Written for cookwala-rs tests; needs `jsonschema`.
"""
import json
import pathlib
import re
import sys

import jsonschema
from referencing import Registry, Resource

TS = re.compile(r'^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$')
BASE = 'https://cookwala.ai/v1/schemas/'
WHERE = {
    'Recipe': 'recipe.schema.json', 'Capabilities': 'capabilities.schema.json',
    'KeyRecord': 'common.schema.json#/$defs/KeyRecord', 'AgentMandate': 'common.schema.json#/$defs/AgentMandate',
    'Disclosure': 'common.schema.json#/$defs/Disclosure',
    'MissionEvent': 'mission.schema.json#/$defs/MissionEvent', 'Checkpoint': 'mission.schema.json#/$defs/Checkpoint',
}


def checker():
    fc = jsonschema.FormatChecker()

    @fc.checks('date-time', raises=ValueError)
    def _dt(v):
        if isinstance(v, str) and not TS.match(v):
            raise ValueError('not a timestamp')
        return True
    return fc


def main():
    req = json.load(sys.stdin)
    resources = []
    for p in sorted(pathlib.Path(req['schemas']).rglob('*.schema.json')):
        s = json.loads(p.read_text(encoding='utf-8'))
        resources.append((s['$id'], Resource.from_contents(s)))
    registry = Registry().with_resources(resources)
    out = []
    for case in req['cases']:
        ref = BASE + WHERE.get(case['kind'], 'core.schema.json#/$defs/' + case['kind'])
        v = jsonschema.Draft202012Validator({'$ref': ref}, registry=registry, format_checker=checker())
        out.append(v.is_valid(case['doc']))
    print(json.dumps(out))


main()
