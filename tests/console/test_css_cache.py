"""The stylesheets' parse kept between runs (console/tui/css_cache.py): a second console reads app.tcss's rules from
the file instead of parsing it and draws the same screen; a damaged file is a miss, parsed over and rewritten."""
from __future__ import annotations

import asyncio
import pickle

import pytest
import textual.css.stylesheet as textual_stylesheet

from optseq.console.tui.app import make_app
from tests.conftest import DEFAULT_PLAN

ROUNDS = 2000
"""Pauses before a wait is called a hang: a count, never a time budget."""


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.delenv("OPTSEQ_PLAN", raising=False)
    monkeypatch.delenv("OPTSEQ_DB", raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def first_screen(db, parsed: list[str]) -> str:
    """The first screen (hours column filled, views mounted, settled) as an SVG, noting each source Textual
    parsed."""
    real_parse = textual_stylesheet.parse

    def noting(scope, css, read_from, *args, **kwargs):
        parsed.append(str(read_from[0]))
        return real_parse(scope, css, read_from, *args, **kwargs)

    async def go() -> str:
        app = make_app(DEFAULT_PLAN, db)
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.main.query_one("#levers")
            for _ in range(ROUNDS):
                if (table.cell_text("option_b", "saved") == "4.46" and app.main.query("#graph-view")
                        and app.main.query("#history-view")):
                    break
                await pilot.pause(0.01)
            else:
                raise AssertionError("the first screen never came")
            # the same screen twice running: what a later frame still moves (the tabs' underline, a view just
            # mounted) has settled
            shot = app.export_screenshot()
            for _ in range(ROUNDS):
                await pilot.pause(0.01)
                shot, previous = app.export_screenshot(), shot
                if shot == previous:
                    return shot
            raise AssertionError("the first screen never settled")

    textual_stylesheet.parse = noting
    try:
        return asyncio.run(go())
    finally:
        textual_stylesheet.parse = real_parse


def cache_files(tmp_path) -> list:
    return sorted((tmp_path / "cache" / "optseq").glob("tcss-*.pickle"))


def test_a_second_console_reads_the_rules_and_draws_the_same_screen(tmp_path):
    db = tmp_path / "state"
    parsed_first: list[str] = []
    first = first_screen(db, parsed_first)
    assert any(p.endswith("app.tcss") for p in parsed_first)  # no file yet: Textual parsed it
    [kept] = cache_files(tmp_path)
    parsed_again: list[str] = []
    again = first_screen(db, parsed_again)
    assert parsed_again == []  # every source the first screen uses came from the file
    assert again == first
    assert cache_files(tmp_path) == [kept]


def test_a_damaged_file_is_parsed_over_and_rewritten(tmp_path):
    db = tmp_path / "state"
    first_screen(db, [])
    [kept] = cache_files(tmp_path)
    good = kept.read_bytes()
    kept.write_bytes(good[: len(good) // 2])  # cut short, as a full disk might leave it
    parsed: list[str] = []
    damaged = first_screen(db, parsed)
    assert any(p.endswith("app.tcss") for p in parsed)
    assert isinstance(pickle.loads(kept.read_bytes()), dict)  # written whole again
    assert damaged == first_screen(db, [])
