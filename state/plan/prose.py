"""Plan text in more than one language: `intro = { ko = "…", en = "…" }` beside a plain string.

A prose field read from such a table is a `Prose`: a str holding the plan's own language's text (what the
console, the CLI and every check read, unchanged), carrying the other languages' texts for the export, which
reads the plan through `localized(plan, lang)`.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import msgspec


class Prose(str):
    """The text in the plan's language; `texts` holds it in every language the plan gives (that one too)."""

    texts: Mapping[str, str]
    lang: str

    def __new__(cls, texts: dict[str, str], lang: str) -> "Prose":
        self = super().__new__(cls, texts[lang])
        self.texts = MappingProxyType(dict(texts))
        self.lang = lang
        return self

    def __reduce__(self):
        # str's own reduction would rebuild it from the text alone, losing the other languages
        return Prose, (dict(self.texts), self.lang)

    def in_lang(self, lang: str) -> str:
        """The text in `lang`, else in the plan's language: a plain str."""
        return str(self.texts.get(lang, self.texts[self.lang]))


def in_lang(text: str, lang: str) -> str:
    """`text` in `lang` if the plan gives it so; a plain string is the same in every language."""
    return text.in_lang(lang) if isinstance(text, Prose) else text


def localized(value, lang: str):
    """`value` (a Plan, or any part of one) with every Prose replaced by its text in `lang`.

    Structs, tuples, lists and dicts are rebuilt only where something inside changed, so a part without prose (a
    gate, a workload) is the same object after as before.
    """
    if isinstance(value, Prose):
        return value.in_lang(lang)
    if isinstance(value, msgspec.Struct):
        changed = {}
        for name in value.__struct_fields__:
            old = getattr(value, name)
            new = localized(old, lang)
            if new is not old:
                changed[name] = new
        return msgspec.structs.replace(value, **changed) if changed else value
    if isinstance(value, (tuple, list)):
        items = [localized(item, lang) for item in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        entries = {key: localized(item, lang) for key, item in value.items()}
        if all(entries[key] is item for key, item in value.items()):
            return value
        return entries
    return value
