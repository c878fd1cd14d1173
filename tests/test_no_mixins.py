"""No class of state/ or console/ borrows another's attributes (issue 41, point 2): a big class is a composition of
parts, each given what it needs in its constructor (the plan's PlanReader holds a Fields over one Problems, the
calculus holds its Inputs and the Orders over them, the export's doc its parts), never a tower of mixins.

A class may still subclass an in-repo class that is a type rather than a mixin: an error family (`except
StoreError` catches them all), a msgspec Struct or an enum (a record's shared fields and options), or a base listed
in TEMPLATES with the reason it is one. Read from the source (ast), so the check imports nothing."""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("state", "console")

TYPES = {"BaseException", "Exception", "Warning", "Struct", "Enum", "IntEnum", "StrEnum", "Flag", "NamedTuple",
         "TypedDict", "Protocol"}
"""Outside bases that make an in-repo base a type: what derives from it is a kind of it, not a borrower."""

TEMPLATES = {
    "console/tui/dialogs/form.py:FormDialog":
        "Textual's way to make a modal form: each dialog yields its fields and turns them into a result, the form's "
        "layout, keys and error line are the screen's own (ModalScreen subclasses, as Textual's widgets do)",
}
"""In-repo bases that are neither errors nor records, with why subclassing them is not borrowing."""


@cache
def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"))


@cache
def _classes() -> dict[str, ast.ClassDef]:
    """`room/path.py:Name` -> its class, for every top-level class of the rooms."""
    found = {}
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            for node in _tree(str(path.relative_to(ROOT))).body:
                if isinstance(node, ast.ClassDef):
                    found[f"{path.relative_to(ROOT)}:{node.name}"] = node
    return found


def _module_file(module: str) -> str | None:
    """optseq.state.plan.fields -> state/plan/fields.py (None outside the rooms)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "optseq" or parts[1] not in ROOMS:
        return None
    path = Path(*parts[1:])
    return str(path / "__init__.py") if (ROOT / path).is_dir() else f"{path}.py"


def _names(path: str) -> dict[str, str]:
    """The names a module binds to in-repo classes: its own classes and those it imports by name."""
    tree = _tree(path)
    names = {node.name: f"{path}:{node.name}" for node in tree.body if isinstance(node, ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            source = _module_file(node.module)
            if source is not None:
                for alias in node.names:
                    names.setdefault(alias.asname or alias.name, f"{source}:{alias.name}")
    return names


def _base_name(base: ast.expr) -> str | None:
    """The name a base is written by: `Struct`, `msgspec.Struct`, `ModalScreen[Any]`."""
    if isinstance(base, ast.Subscript):
        base = base.value
    if isinstance(base, ast.Name):
        return base.id
    if isinstance(base, ast.Attribute):
        return base.attr
    return None


@cache
def _bases() -> dict[str, tuple[list[str], list[str]]]:
    """Each class's (in-repo bases, outside bases)."""
    classes = _classes()
    out = {}
    names_of: dict[str, dict[str, str]] = {}
    for key, node in classes.items():
        path = key.split(":")[0]
        names = names_of.setdefault(path, _names(path))
        inside, outside = [], []
        for base in node.bases:
            name = _base_name(base)
            if name is None:
                continue
            target = names.get(name) if isinstance(base, (ast.Name, ast.Subscript)) else None
            (inside if target in classes else outside).append(target if target in classes else name)
        out[key] = (inside, outside)
    return out


def _is_type(key: str, bases: dict[str, tuple[list[str], list[str]]], seen: frozenset = frozenset()) -> bool:
    """Whether an in-repo class is an error, a record or an enum: one of TYPES, or an outside `…Error`, among the
    bases it comes from."""
    inside, outside = bases[key]
    if any(name in TYPES or name.endswith("Error") for name in outside):
        return True
    return any(_is_type(base, bases, seen | {key}) for base in inside if base not in seen)


def test_no_class_borrows_another_in_repo_classs_attributes():
    bases = _bases()
    borrowing = {key: [base for base in inside if base not in TEMPLATES and not _is_type(base, bases)]
                 for key, (inside, _) in bases.items()}
    assert {key: found for key, found in borrowing.items() if found} == {}


def test_the_check_sees_what_it_checks():
    """The scan finds the compositions it guards, types it lets through and each template still used: a rename
    that hid a class from it (or a template no longer subclassed) fails here rather than passing unseen."""
    classes, bases = _classes(), _bases()
    for key in ("state/plan/loader.py:PlanReader", "state/plan/levers.py:LeverReader", "state/plan/fields.py:Fields",
                "state/calculus/whatif.py:Calculus", "state/calculus/orders.py:Orders",
                "state/calculus/inputs.py:Inputs", "state/report/markdown.py:_Doc",
                "state/report/context.py:DocContext"):
        assert key in classes and bases[key][0] == [], key
    assert bases["state/plan/fields.py:Said"][0] == ["state/plan/model.py:PlanError"]
    assert _is_type("state/plan/model.py:PlanError", bases)
    used = {base for inside, _ in bases.values() for base in inside}
    assert set(TEMPLATES) <= used
