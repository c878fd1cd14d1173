"""The plan's `[testbed]` and what a run record says of the machine it ran on.

```toml
[testbed]
name = "gpu-box"      # this checkout's testbed (OPTSEQ_TESTBED wins over it); default: the machine's fingerprint
decides = "gpu-box"   # only runs on this testbed (its name or fingerprint id) decide levers and stale numbers
```

A run record carries `testbed: {id, name, parts}` (state/runs/testbed.py makes it). A record from before testbeds
were recorded has none: it reads as UNKNOWN and counts as the testbed that decides, so a store written before
changes no state when read now (its numbers all came from the one machine that store lived on).
"""
from __future__ import annotations

import re

import msgspec

KEYS = {"name", "decides"}
UNKNOWN = "unknown"
"""The testbed of a run recorded before runs carried one."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A testbed's name: what a user types in OPTSEQ_TESTBED or the plan, and reads in a table's column."""


class TestbedSettings(msgspec.Struct, frozen=True):
    name: str | None = None
    """`[testbed] name`: this checkout's testbed, unless OPTSEQ_TESTBED names another."""
    decides: str | None = None
    """`[testbed] decides`: the testbed whose numbers decide; None = every testbed's (one machine's store)."""


def name_problem(name: object) -> str | None:
    """Why `name` is not a testbed name (one clause), or None."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        return (f"{name!r} is not a testbed name (letters, digits, '.', '_' and '-', at most 64, starting with a "
                "letter or digit)")
    if name == UNKNOWN:
        return f"{name!r} is what runs recorded without a testbed read as; name the testbed otherwise"
    return None


def of(record: dict | None) -> dict | None:
    """The run record's testbed ({id, name, parts}), None for one recorded before testbeds were."""
    found = (record or {}).get("testbed")
    return found if isinstance(found, dict) and isinstance(found.get("name"), str) else None


def name_of(record: dict | None) -> str:
    found = of(record)
    return found["name"] if found else UNKNOWN


def label(record: dict | None) -> str:
    """The testbed's name as a table shows it: a cluster's run that carries the launcher's (its node said nothing)
    says so."""
    found = of(record)
    if not found:
        return UNKNOWN
    return f"{found['name']} (launcher's; the node said none)" if found.get("fallback") else found["name"]


def is_named(testbed: dict | None, name: str | None) -> bool:
    """Whether `testbed` is the one `name` names (by its name or its fingerprint id); an unknown one is any."""
    return testbed is None or name is None or name in (testbed.get("name"), testbed.get("id"))


def same(a: dict | None, b: dict | None) -> bool:
    """Two runs measured on one testbed, as far as the records tell (an unknown one is the same as any)."""
    return a is None or b is None or a.get("name") == b.get("name")


def decides(record: dict | None, settings: TestbedSettings) -> bool:
    """Whether a run's numbers may decide a lever and stale another's under the plan's `[testbed] decides`."""
    return is_named(of(record), settings.decides)


def parse(loader, raw) -> TestbedSettings:
    """The plan's `[testbed]`, each value checked and refused in one line."""
    where = "testbed"
    if not isinstance(raw, dict):
        raise loader.fail(where, f"expected a [testbed] table, got {type(raw).__name__}")
    loader.check_keys(raw, KEYS, where)
    found = {}
    for key in sorted(KEYS):
        value = loader.get(raw, key, where, str, None)
        problem = name_problem(value) if value is not None else None
        if problem:
            raise loader.fail(f"{where}.{key}", problem)
        found[key] = value
    return TestbedSettings(**found)


def foreign_note(record: dict | None, settings: TestbedSettings) -> str:
    """What a run on another testbed than the deciding one says of itself, in one clause."""
    return f"measured on {name_of(record)}, not the plan's testbed {settings.decides}, so it decides nothing"
