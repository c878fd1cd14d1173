"""Where a key is written in a plan's text: the line a one-line PlanError names beside its dotted key.

tomllib gives values, not positions, so the text is walked once more: table headers, keys, and values skipped over
(strings of the four kinds, arrays and inline tables, whose keys and elements are located too). It runs only on an
error, on text tomllib has already parsed; anything it cannot follow ends the walk with the lines found so far.
"""
from __future__ import annotations

import bisect
import re
import tomllib

Path_ = tuple  # a key's path in the parsed data: table names, and indices into arrays (of tables)

_BARE = re.compile(r"[A-Za-z0-9_-]+")
STRINGS = {
    '"""': re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"{3,5}', re.S),
    "'''": re.compile(r"'''(?:[^']|'(?!''))*'{3,5}"),
    '"': re.compile(r'"(?:[^"\\\n]|\\.)*"'),
    "'": re.compile(r"'[^'\n]*'"),
}
"""A TOML string from its opening quotes to its closing ones (a multi-line one may end in up to two quotes of its
own); basic strings escape, literal ones do not. The loader's depth count skips strings with it too."""
_SCALAR = re.compile(r"[^,\]}\n#]+")
_KEY_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def key_line(text: str, data: dict, key: str) -> int | None:
    """The 1-based line of `key` (an error's dotted key: `levers.fast.rule.min_speedup`, `order[1].levers`), or
    of the nearest table or key around it that is written (a missing key: the table it is missing from)."""
    path = resolve(data, key)
    lines = key_lines(text)
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def resolve(data: dict, key: str) -> Path_:
    """An error's dotted key as a path in `data`: a lever named by id (`levers.fast`) becomes its index (the last
    with that id: a duplicate is the one at fault). Stops where the data does not follow."""
    node, path = data, []
    for name, index in _KEY_PART.findall(key):
        step = int(index) if index else name
        if isinstance(node, list) and isinstance(step, str):
            found = [i for i, item in enumerate(node) if isinstance(item, dict) and item.get("id") == step]
            if not found:
                break
            step = found[-1]
        if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        elif isinstance(node, dict) and isinstance(step, str) and step in node:
            node = node[step]
        else:
            break
        path.append(step)
    return tuple(path)


class _Stop(Exception):
    """Text the walk cannot follow: keep what was found."""


def key_lines(text: str) -> dict[Path_, int]:
    """Every written key's path (headers, keys, array elements) and the line it starts on (the first, if twice)."""
    walk = _Walk(text)
    try:
        walk.document()
    except (_Stop, IndexError):
        pass
    return walk.lines


class _Walk:
    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.lines: dict[Path_, int] = {}
        self.arrays: dict[Path_, int] = {}
        """Arrays of tables seen so far ([[levers]]): how many elements each has."""

    def mark(self, path: Path_, at: int) -> None:
        self.lines.setdefault(path, bisect.bisect_right(self.newlines, at - 1) + 1)

    def blank(self, newlines: bool = True) -> None:
        """Skip whitespace and comments (newlines too, unless on one line)."""
        while self.i < len(self.text):
            c = self.text[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#":
                end = self.text.find("\n", self.i)
                self.i = len(self.text) if end < 0 else end
            else:
                return

    def expect(self, token: str) -> None:
        self.blank(newlines=False)
        if not self.text.startswith(token, self.i):
            raise _Stop
        self.i += len(token)

    def document(self) -> None:
        table: Path_ = ()
        while True:
            self.blank()
            if self.i >= len(self.text):
                return
            if self.text[self.i] == "[":
                many = self.text.startswith("[[", self.i)
                start = self.i
                self.i += 2 if many else 1
                table = self.header(self.key(), many, start)
                self.expect("]]" if many else "]")
            else:
                start = self.i
                keys = self.key()
                self.expect("=")
                self.mark_keys(table, keys, start)
                self.value(table + keys)

    def header(self, keys: Path_, many: bool, start: int) -> Path_:
        path: Path_ = ()
        for n, name in enumerate(keys):
            path += (name,)
            self.mark(path, start)  # [facts.x] and [[levers]] write `facts` and `levers` too
            if many and n == len(keys) - 1:
                count = self.arrays.get(path, 0)
                self.arrays[path] = count + 1
                path += (count,)
            elif path in self.arrays:
                path += (self.arrays[path] - 1,)  # [levers.arms]: the arms of the last [[levers]]
        self.mark(path, start)
        return path

    def mark_keys(self, table: Path_, keys: Path_, start: int) -> None:
        for end in range(1, len(keys) + 1):  # a dotted key defines its tables too
            self.mark(table + keys[:end], start)

    def key(self) -> Path_:
        parts = []
        while True:
            self.blank(newlines=False)
            c = self.text[self.i]
            if c in "\"'":
                match = STRINGS[c].match(self.text, self.i)
                if match is None:
                    raise _Stop
                parts.append(tomllib.loads(f"k = {match.group()}")["k"])
            else:
                match = _BARE.match(self.text, self.i)
                if match is None:
                    raise _Stop
                parts.append(match.group())
            self.i = match.end()
            self.blank(newlines=False)
            if not self.text.startswith(".", self.i):
                return tuple(parts)
            self.i += 1

    def value(self, path: Path_) -> None:
        self.blank(newlines=False)
        c = self.text[self.i]
        if c in "\"'":
            quote = c * 3 if self.text.startswith(c * 3, self.i) else c
            match = STRINGS[quote].match(self.text, self.i)
            if match is None:
                raise _Stop
            self.i = match.end()
        elif c == "{":
            self.i += 1
            while True:
                self.blank()
                if self.text.startswith("}", self.i):
                    self.i += 1
                    return
                start = self.i
                keys = self.key()
                self.expect("=")
                self.mark_keys(path, keys, start)
                self.value(path + keys)
                self.blank()
                if self.text.startswith(",", self.i):
                    self.i += 1
        elif c == "[":
            self.i += 1
            index = 0
            while True:
                self.blank()
                if self.text.startswith("]", self.i):
                    self.i += 1
                    return
                self.mark(path + (index,), self.i)
                self.value(path + (index,))
                index += 1
                self.blank()
                if self.text.startswith(",", self.i):
                    self.i += 1
        else:
            match = _SCALAR.match(self.text, self.i)
            if match is None:
                raise _Stop
            self.i = match.end()
