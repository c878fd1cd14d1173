"""A said: one sentence of a table as plain data, {"key", "fields"}, kept beside its English so the export says it
again in its own language. The tables live with what writes their sentences (lifecycle/words.py, runs/words.py,
calculus/words.py, code/words.py); this is how any of them is said, on the floor every room may import.
"""
from __future__ import annotations

JOINS = {"reasons": "; ", "options": " | ", "highs": ", ", "costs": ", ", "parts": ", ", "items": ", ", "guards": "; "}
"""How a list field is joined where the sentence's punctuation, not a word, separates its items."""


def say(key: str, **fields) -> dict:
    """A sentence of a table as plain data: what the store and the snapshot keep beside its English."""
    return {"key": key, "fields": fields}


def text(said: dict, lang: str, words: dict[str, dict[str, str]]) -> str:
    """`said` in `lang`, from `words` (key -> sentence, per language). A field is a string or number (the same in
    every language: ids, runs, commits), a said (said in the same language), or a list of them, joined by
    JOINS[field name] (the language's `and` else)."""
    def value(name, v):
        if isinstance(v, dict) and "key" in v:
            return text(v, lang, words)
        if isinstance(v, list):
            return JOINS.get(name, words[lang]["and"]).join(str(value(name, item)) for item in v)
        return v

    fields = said.get("fields") or {}
    return words[lang][said["key"]].format(**{name: value(name, v) for name, v in fields.items()})


def said_in(said: dict | None, fallback: str, lang: str, words: dict[str, dict[str, str]]) -> str:
    """A stored sentence in `lang` where its said was kept (and its key is known here), else its stored text (a
    record written before saids were kept, or by a move that keeps none)."""
    if isinstance(said, dict) and said.get("key") in words[lang]:
        try:
            return text(said, lang, words)
        except (KeyError, IndexError, ValueError):  # a said of another release's fields: its text stands
            return fallback
    return fallback
