"""A plan of one speedup lever around a stand-in command: the shape most run tests need."""
from __future__ import annotations

import json
from pathlib import Path

RULE = 'metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12'


def one_lever_plan(directory: Path, argv: list[str], *, rule: str = RULE, timeout: float | None = 60,
                   extra: str = "", title: str = "Run tests", lever: str = "lever") -> Path:
    """Write `plan.toml` in `directory`: lever `lever` runs `argv` under `rule` (the inside of its table)."""
    path = Path(directory) / "plan.toml"
    path.write_text(f"""
[plan]
title = "{title}"
as_of = 2026-11-01
lang = "en"

[[levers]]
id = "{lever}"
title = "A lever"
kind = "speedup"
plan_doc = "docs/lever.md"
run = {json.dumps(argv)}
{f"timeout_s = {timeout}" if timeout is not None else ""}
rule = {{ {rule} }}
{extra}
""", encoding="utf-8")
    return path
