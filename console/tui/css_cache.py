"""Textual's parse of the console's stylesheets, kept between runs.

Before its first frame the console parses app.tcss and the default CSS of every widget it shows: a tenth of
its start-up, the same work each time for the same text. The parsed rule sets are kept in a file in the user's
cache directory, one per Textual install (its CSS modules' paths, sizes and times), Python version and set of
theme variables (what a parse depends on beside the text), and read back at the next start; a source whose text
or location is not in the file is parsed as before, and the file is rewritten once the first screen is styled
(before its first frame) and when the console closes. An unreadable, foreign or damaged file is a miss, never
an error: the console parses as if there were none.
"""
from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import textual
from textual.css.stylesheet import Stylesheet

from optseq.state.api import atomic, cache_root
from optseq.state.api import hex_digest

VERSION = 1
"""The file's layout; bumped when what it holds changes."""


def cache_file(variables: dict[str, str]) -> Path | None:
    """$XDG_CACHE_HOME/optseq (else ~/.cache/optseq), the file for these variables; None without a home."""
    base = cache_root()
    if base is None:
        return None
    key = repr((VERSION, _textual_files(), sys.version, sorted(variables.items())))
    return base / f"tcss-{hex_digest(key)[:16]}.pickle"


def _textual_files() -> list:
    """Which Textual parses: the modules that make rule sets, by path, size and time. Not textual.__version__,
    which loads importlib.metadata (with email, zipfile, csv: more than the parse this saves)."""
    css = Path(textual.__file__).parent / "css"
    out = []
    for name in ("model.py", "parse.py", "styles.py", "stylesheet.py", "_styles_builder.py", "tokenize.py"):
        try:
            st = os.stat(css / name)
        except OSError:
            return [str(css), None]
        out.append((name, st.st_size, st.st_mtime_ns))
    return [str(css), out]


class CachedStylesheet(Stylesheet):
    """Textual's Stylesheet, whose parse of a source comes from the cache file when the file has it."""

    def __init__(self, *, variables: dict[str, str] | None = None, path: Path | None = None) -> None:
        super().__init__(variables=variables)
        self._kept_variables = self._variables
        """The variables the file was chosen for: once the theme changes them, every parse is Textual's own."""
        self._file = path
        self._kept: dict[tuple, list] = _read(path)
        self._new = False

    def _parse_rules(self, css: str, read_from, is_default_rules: bool = False, tie_breaker: int = 0,
                     scope: str = "") -> list:
        key = (css, read_from, is_default_rules, tie_breaker, scope)
        same = self._variables is self._kept_variables
        if same and key in self._kept:
            rules = self._kept[key]
            self._parse_cache[key] = rules
            return rules
        rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        if same and not any(rule.errors for rule in rules):  # a source in error is reported, never kept
            self._kept[key] = rules
            self._new = True
        return rules

    def keep(self) -> None:
        """Write the file if a source was parsed that it did not have (atomically; a failure is a miss later)."""
        if not self._new or self._file is None:
            return
        self._new = False
        try:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            # a cache: a lost write is a parse next time, so nothing is fsynced
            atomic.replace(self._file, pickle.dumps(self._kept, protocol=pickle.HIGHEST_PROTOCOL), keep_mode=False,
                           fsync=False, sync_dir="no")
        except Exception:  # noqa: BLE001 - a read-only home, a full disk, an unpicklable rule: parse next time
            pass


def _read(path: Path | None) -> dict[tuple, list]:
    if path is None:
        return {}
    try:
        kept = pickle.loads(path.read_bytes())
    except Exception:  # noqa: BLE001 - missing, damaged, of another layout: parsed as if there were none
        return {}
    return kept if isinstance(kept, dict) else {}
