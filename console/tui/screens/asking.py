"""The main screen's forms: criterion, plan doc, fact, decision and export, each asked in a dialog and written
through the sequencer, its lines (or its one-line refusal) said as notifications."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.markup import escape

from optseq.console.tui.screens.host import ScreenHost
from optseq.state.api import InputError
from optseq.state.api import StoreError

if TYPE_CHECKING:
    from optseq.console.tui.dialogs.form import FormDialog

Values = dict[str, Any]
"""What a form closes with: its fields by name."""


class Forms:
    """Asks the screen's forms (c, p, f, d, e) about the screen's selected lever and writes what they answer."""

    def __init__(self, host: ScreenHost) -> None:
        self.host = host

    def record_criterion(self) -> None:
        host = self.host
        if host.selected is None:
            return
        lever = host.seq.plan.lever(host.selected)
        if lever.criteria is None:
            host.notify(f"{lever.id} is a {lever.kind} lever; only decision levers have criteria", severity="error")
            return
        from optseq.console.tui.dialogs.criterion import CriterionDialog

        self._ask(CriterionDialog(lever, host.shown[lever.id]), lambda v: host.seq.actions.record_criterion(
            lever.id, v["candidate"], v["criterion"], v["outcome"], v["evidence"]))

    def mark_plan(self) -> None:
        from optseq.console.tui.dialogs.confirm import ConfirmDialog
        from optseq.console.tui.dialogs.plan_path import PlanDialog

        host, lever_id = self.host, self.host.selected
        if lever_id is None:
            return
        seq = host.seq
        dialog = PlanDialog(lever_id, host.shown[lever_id].plan_doc, check=seq.actions.check_plan_doc)
        # a doc not written yet: asked about once the form has closed, and created from a template on yes
        dialog.apply = lambda v: v if v["missing"] else seq.actions.write_plan(lever_id, v["path"], check=True)

        def closed(done: Values | list[str] | None) -> None:
            if isinstance(done, dict):
                path = done["path"]

                def create(yes: bool | None) -> None:
                    if yes:
                        self.write(lambda: [*seq.actions.create_plan_doc(lever_id, path),
                                            *seq.actions.write_plan(lever_id, path, check=True)])
                host.app.push_screen(ConfirmDialog(escape(
                    f"{path} does not exist yet. Create it from a short template (fill it in after), and mark "
                    f"{lever_id}'s plan written?"), "Create", "Back"), create)
            elif done is not None:
                self.write(lambda: done)
        host.app.push_screen(dialog, closed)

    def set_fact(self) -> None:
        host = self.host
        if not host.seq.plan.facts:
            host.notify("the plan declares no facts", severity="warning")
            return
        from optseq.console.tui.dialogs.fact import FactDialog

        self._ask(FactDialog(list(host.seq.plan.facts), host.seq.views.status().facts),
                  lambda v: host.seq.actions.set_fact(v["name"], v["value"]))

    def decide(self) -> None:
        from optseq.console.tui.dialogs.confirm import ConfirmDialog
        from optseq.console.tui.dialogs.decide import DecideDialog

        host = self.host
        if host.selected is None:
            return
        seq = host.seq
        lever = seq.plan.lever(host.selected)
        view = host.shown[lever.id]

        def ask(go: bool | None = True) -> None:
            if go:
                runs = seq.views.lever_history(lever.id)["runs"]
                self._ask(DecideDialog(lever, runs), lambda v: seq.actions.decide(lever.id, v["outcome"], v["why"]))
        if view.state not in ("blocked", "unplanned"):
            ask()
            return
        # deciding skips the gates: say what they still wait for before the rationale is written
        why = "; ".join(re.sub(r" \(optseq [^)]*\)", "", reason) for reason in view.why_blocked)
        host.app.push_screen(ConfirmDialog(escape(f"{lever.id} is {view.state}: {why or 'its gates are not met'}. "
                                                  "Decide it by hand anyway?"), "Decide", "Back"), ask)

    def export(self) -> None:
        from optseq.console.tui.dialogs.export_path import ExportDialog
        from optseq.state.api import default_target, export_doc

        host = self.host
        seq = host.seq
        default = default_target(seq.store.directory, seq.plan.title)
        if host.export_dir is not None:
            default = host.export_dir / default.name
        # the dialog writes (in a thread, asking before it replaces a file) and closes with what it wrote; the
        # default's folder (docs/ beside the state directory) is made if missing, a folder typed in never is
        dialog = ExportDialog(str(default), seq.plan.lang,
                              export=lambda path, lang, force: export_doc(
                                  seq, path, lang, force=force,
                                  make_dir=os.path.abspath(path) == os.path.abspath(default)))
        host.app.push_screen(dialog, self._preview)

    def _preview(self, written: tuple[Path, str] | None) -> None:
        if written:
            from optseq.console.tui.screens.export_preview import ExportPreview

            path, text = written
            self.host.app.push_screen(ExportPreview(text, str(path)))

    def _ask(self, dialog: FormDialog, write: Callable[[Values], list[str]]) -> None:
        """Show a form whose OK runs `write(values)`: a refusal stays on the form (what was typed kept), a
        write's lines become notifications once it closes."""
        dialog.apply = write

        def closed(lines: list[str] | None) -> None:
            if lines is not None:
                self.write(lambda: lines)
        self.host.app.push_screen(dialog, closed)

    def write(self, do: Callable[[], list[str]]) -> bool:
        """Run one store write; its lines (or its one-line error) become notifications."""
        host = self.host
        try:
            lines = do()
        except (InputError, StoreError) as exc:
            host.notify(str(exc), severity="error", timeout=8)
            return False
        if lines:
            host.notify("\n".join(lines))  # one notification: each would replace the one before
        host.refresh_view()
        return True
