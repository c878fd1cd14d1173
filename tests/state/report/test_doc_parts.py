"""The export's doc is composed of parts, not a tower of mixins: each part is given the doc's context (and the
LeverWords it asks about levers) in its constructor, so no class of report/ inherits another's attributes."""
from __future__ import annotations

import ast
from pathlib import Path

REPORT = Path(__file__).resolve().parents[3] / "state" / "report"


def test_no_class_of_the_report_subclasses_another():
    classes: dict[str, list[str]] = {}
    for module in sorted(REPORT.glob("*.py")):
        for node in ast.parse(module.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                classes[f"{module.name}:{node.name}"] = [b.id for b in node.bases if isinstance(b, ast.Name)]
    names = {key.split(":")[1] for key in classes}
    # the export target's refusals are one family of errors (NotAChart is a NotAnExport): a type, not a mixin
    errors = {"ExportTargetError", "NotAnExport", "NotAChart"}
    borrowed = {key: [b for b in bases if b in names and b not in errors] for key, bases in classes.items()}
    assert {key: bases for key, bases in borrowed.items() if bases} == {}
    assert "context.py:DocContext" in classes and "markdown.py:_Doc" in classes
