"""The main screen's forms: criterion, plan doc, fact, decision and export, each asked in a dialog and written
through the sequencer, its lines (or its one-line refusal) said as notifications."""
from __future__ import annotations

import os
import re

from textual.markup import escape

from optseq.state.api import InputError
from optseq.state.api import StoreError


class Asking:
    """MainScreen's dialog actions (a mixin: it reads the screen's `seq`, `selected`, `_views` and `export_dir`)."""

    def action_record_criterion(self) -> None:
        lever = self.seq.plan.lever(self.selected)
        if lever.criteria is None:
            self.notify(f"{lever.id} is a {lever.kind} lever; only decision levers have criteria",
                        severity="error")
            return
        from optseq.console.tui.dialogs.criterion import CriterionDialog

        self._ask(CriterionDialog(lever, self._views[lever.id]), lambda v: self.seq.record_criterion(
            lever.id, v["candidate"], v["criterion"], v["outcome"], v["evidence"]))

    def action_mark_plan(self) -> None:
        from optseq.console.tui.dialogs.confirm import ConfirmDialog
        from optseq.console.tui.dialogs.plan_path import PlanDialog

        lever_id = self.selected
        dialog = PlanDialog(lever_id, self._views[lever_id].get("plan_doc"), check=self.seq.check_plan_doc)
        # a doc not written yet: asked about once the form has closed, and created from a template on yes
        dialog.apply = lambda v: v if v["missing"] else self.seq.write_plan(lever_id, v["path"], check=True)

        def closed(done) -> None:
            if isinstance(done, dict):
                path = done["path"]
                self.app.push_screen(ConfirmDialog(escape(
                    f"{path} does not exist yet. Create it from a short template (fill it in after), and mark "
                    f"{lever_id}'s plan written?"), "Create", "Back"),
                    lambda yes: yes and self._write(lambda: [*self.seq.create_plan_doc(lever_id, path),
                                                             *self.seq.write_plan(lever_id, path, check=True)]))
            elif done is not None:
                self._write(lambda: done)
        self.app.push_screen(dialog, closed)

    def action_set_fact(self) -> None:
        if not self.seq.plan.facts:
            self.notify("the plan declares no facts", severity="warning")
            return
        from optseq.console.tui.dialogs.fact import FactDialog

        self._ask(FactDialog(list(self.seq.plan.facts), self.seq.status()["facts"]),
                  lambda v: self.seq.set_fact(v["name"], v["value"]))

    def action_decide(self) -> None:
        from optseq.console.tui.dialogs.confirm import ConfirmDialog
        from optseq.console.tui.dialogs.decide import DecideDialog

        lever = self.seq.plan.lever(self.selected)
        view = self._views[lever.id]

        def ask(go: bool = True) -> None:
            if go:
                runs = self.seq.lever_history(lever.id)["runs"]
                self._ask(DecideDialog(lever, runs), lambda v: self.seq.decide(lever.id, v["outcome"], v["why"]))
        if view["state"] not in ("blocked", "unplanned"):
            ask()
            return
        # deciding skips the gates: say what they still wait for before the rationale is written
        why = "; ".join(re.sub(r" \(optseq [^)]*\)", "", reason) for reason in view["why_blocked"])
        self.app.push_screen(ConfirmDialog(escape(f"{lever.id} is {view['state']}: {why or 'its gates are not met'}. "
                                                  "Decide it by hand anyway?"), "Decide", "Back"), ask)

    def action_export(self) -> None:
        from optseq.console.tui.dialogs.export_path import ExportDialog
        from optseq.state.api import default_target, export_doc

        default = default_target(self.seq.store.directory, self.seq.plan.title)
        if self.export_dir is not None:
            default = self.export_dir / default.name
        # the dialog writes (in a thread, asking before it replaces a file) and closes with what it wrote; the
        # default's folder (docs/ beside the state directory) is made if missing, a folder typed in never is
        dialog = ExportDialog(str(default), self.seq.plan.lang,
                              export=lambda path, lang, force: export_doc(
                                  self.seq, path, lang, force=force,
                                  make_dir=os.path.abspath(path) == os.path.abspath(default)))
        self.app.push_screen(dialog, self._export)

    def _export(self, written: tuple | None) -> None:
        if written:
            from optseq.console.tui.screens.export_preview import ExportPreview

            path, text = written
            self.app.push_screen(ExportPreview(text, str(path)))

    def _ask(self, dialog, write) -> None:
        """Show a form whose OK runs `write(values)`: a refusal stays on the form (what was typed kept), a
        write's lines become notifications once it closes."""
        dialog.apply = write
        self.app.push_screen(dialog, lambda lines: None if lines is None else self._write(lambda: lines))

    def _write(self, do) -> bool:
        """Run one store write; its lines (or its one-line error) become notifications."""
        try:
            lines = do()
        except (InputError, StoreError) as exc:
            self.notify(str(exc), severity="error", timeout=8)
            return False
        if lines:
            self.notify("\n".join(lines))  # one notification: each would replace the one before
        self.refresh_view()
        return True
