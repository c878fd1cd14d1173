"""Which decisions were superseded, and by what: read once from the decisions and events, kept compact so that
`optseq runs --json` marks a history of any length in bounded memory.

A decision is superseded by a later decision of its lever (its `supersedes`) or by a derived `superseded` event
(a reversal closed its branch, or a re-measure came back inconclusive), the event winning. The text that says
so is rebuilt when asked for: a decision's mark is one machine integer in an array indexed by decision id (the
superseding decision's id, whose "lever decided outcome" is a small code into the few such texts a plan has),
so only an event's reason, which names its own run, is kept as text.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any


class Marks:
    """decision id -> what superseded it (`get`), from one pass over the decisions and one over the events."""

    def __init__(self, decisions: Iterable[dict], events: Iterable[dict], spill: bool = False):
        self._by = array("i")
        """Indexed by a superseded decision's id: 0 none, > 0 the id of the decision that superseded it, < 0 the
        text at -(value) - 1 of `_texts` (an event's). Each array takes the narrowest type its values fit, a wider
        one from the first that does not (WIDER): 5 bytes a decision in all, where 12 were."""
        self._said = array("B")
        """Indexed by a superseding decision's id: its "lever decided outcome" as a code into `_sayings`."""
        self._sayings: list[str] = []
        self._codes: dict[str, int] = {}
        self._texts: list[str] | SpilledTexts = SpilledTexts() if spill else []
        """Events' texts; spilled to a temporary file where the whole history is read (3 MB of them in 100,000
        runs with a re-measure in ten: the rest of the marks is a tenth of that)."""
        self._odd: dict[Any, str] = {}
        """Marks of ids no array holds (not an int, or past every decision's id): a store edited by hand."""
        top = 0
        for d in decisions:
            if type(d.get("id")) is int:
                top = max(top, d["id"])
            target = d.get("supersedes")
            if target is None:
                continue
            saying = f"{d['lever']} decided {d['outcome']}"
            if not self._fits(target, top):
                self._odd.setdefault(target, f"decision {d['id']}: {saying}")
            elif self._by[target] == 0:
                if type(d["id"]) is int and d["id"] > 0:
                    self._said = _grown(self._said, d["id"])
                    self._said = _put(self._said, d["id"], self._code(saying))
                    self._by = _put(self._by, target, d["id"])
                else:
                    self._by = _put(self._by, target, self._text(f"decision {d['id']}: {saying}"))
        for e in events:
            if e.get("type") != "superseded" or e.get("decision") is None:
                continue
            what = f"decision {e['by']}" if e.get("by") is not None else f"run {e.get('run')}"
            text, target = f"{what}: {e.get('reason', '')}", e["decision"]
            if target in self._odd or not self._fits(target, top):
                self._odd[target] = text
            elif self._by[target] < 0:  # a later event's reason wins: its slot is reused
                self._texts[-self._by[target] - 1] = text
            else:
                self._by = _put(self._by, target, self._text(text))

    def get(self, decision_id: Any) -> str | None:
        if decision_id in self._odd:
            return self._odd[decision_id]
        if type(decision_id) is not int or not 0 < decision_id < len(self._by):
            return None
        by = self._by[decision_id]
        if by > 0:
            return f"decision {by}: {self._sayings[self._said[by]]}"
        return self._texts[-by - 1] if by < 0 else None

    def mark(self, decision: dict) -> dict:
        """The decision with `superseded` (bool) and `superseded_by` (the text, or None)."""
        by = self.get(decision["id"])
        return dict(decision, superseded=by is not None, superseded_by=by)

    def _fits(self, target: Any, top: int) -> bool:
        if type(target) is not int or not 0 < target <= top:
            return False
        self._by = _grown(self._by, target)
        return True

    def _code(self, saying: str) -> int:
        code = self._codes.get(saying)
        if code is None:
            code = self._codes[saying] = len(self._sayings)
            self._sayings.append(saying)
        return code

    def _text(self, text: str) -> int:
        self._texts.append(text)
        return -len(self._texts)


WIDER = {"B": "H", "H": "I", "I": "Q", "i": "q"}
"""The next type of a Marks array whose values outgrow its type."""


def _grown(a: array, index: int) -> array:
    """`a` holding `index`: grown by what it lacks, the array's own over-allocation (a sixteenth) keeping a pass
    over n decisions at O(n), where doubling left up to half of it unused."""
    if index >= len(a):
        a.frombytes(bytes(a.itemsize * (index + 1 - len(a))))
    return a


def _put(a: array, index: int, value: int) -> array:
    """`a` with `value` at `index`: `a`, or a copy of it in the wider type where the value does not fit."""
    try:
        a[index] = value
    except OverflowError:
        if a.typecode not in WIDER:
            raise
        return _put(array(WIDER[a.typecode], a), index, value)
    return a


class SpilledTexts:
    """A list of texts kept in an unnamed temporary file, their offsets and lengths in arrays: what it holds in
    memory grows by 16 bytes a text, whatever the text's length."""

    def __init__(self) -> None:
        import tempfile

        self._file = tempfile.TemporaryFile()
        self._at, self._size = array("q"), array("q")

    def append(self, text: str) -> None:
        self._at.append(self._file.seek(0, 2))
        self._size.append(self._file.write(text.encode("utf-8", "surrogatepass")))

    def __setitem__(self, index: int, text: str) -> None:
        self._at[index] = self._file.seek(0, 2)
        self._size[index] = self._file.write(text.encode("utf-8", "surrogatepass"))

    def __getitem__(self, index: int) -> str:
        self._file.seek(self._at[index])
        return self._file.read(self._size[index]).decode("utf-8", "surrogatepass")

    def __len__(self) -> int:
        return len(self._at)
