"""The console's sync (S): the same `optseq sync` as the CLI's, with the remote this store last synced with (what
`optseq sync REMOTE` kept), else the plan repository's `origin`, run on a thread worker so the screen goes on while
a large history is fetched and merged; its steps on the status line, its end (or why it could not) in one
notification, and the views refreshed from what was merged."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from optseq.console.tui.screens.host import ScreenHost

REMOTE = "origin"
"""Where a store never synced: the CLI's default too."""


class Syncer:
    """One sync at a time, of the store the screen it is given shows."""

    def __init__(self, host: ScreenHost) -> None:
        self.host = host
        self.syncing = False
        """A sync is under way: S is refused until it ends."""

    def start(self) -> None:
        host = self.host
        if self.syncing:
            host.notify("a sync is under way", severity="warning")
            return
        from optseq.state.api import last_remote

        self.syncing = True
        host.seq.follower.reload()  # a sync from the CLI since the console last read the store may have named another remote
        remote = last_remote(host.seq.store)
        said = "the remote this store last synced with" if remote else "no sync of this store names another"
        remote = remote or REMOTE
        self.step(f"starting with {remote} ({said})")
        host.run_worker(partial_sync(self, remote), thread=True, group="sync", exclusive=True, exit_on_error=False)

    def step(self, text: str) -> None:
        self.host.status_line.say(f"sync: {text}" if text else "")

    def ended(self, line: str, failed: bool, remote: str) -> None:
        host = self.host
        self.syncing = False
        self.step("")
        if not failed:
            host.seq.follower.reload()
        host.refresh_view()
        host.notify(f"sync with {remote} {'refused' if failed else 'done'}: {line}",
                    severity="error" if failed else "information", timeout=10, markup=False)


def partial_sync(syncer: Syncer, remote: str) -> Callable[[], None]:
    """The worker's body, with what it needs read on the UI thread: the store's folder and the plan's."""
    directory = Path(syncer.host.seq.store.directory)
    plan_dir = Path(syncer.host.seq.plan.path).resolve().parent
    app = syncer.host.app

    def body() -> None:
        from optseq.state.api import Store
        from optseq.state.api import sync_summary as summary, sync

        def said(text: str) -> None:
            app.call_from_thread(syncer.step, text)

        try:
            # a store of its own, as the CLI's sync in another process would open it: the console's stays free for
            # the UI thread, and each of the sync's transactions takes the store's lock as any writer's does
            with Store.open(directory, mode="write") as store:
                result = sync(store, plan_dir, remote, progress=said)
        except Exception as exc:  # a missing remote, a refused push or segment: one line, nothing local changed
            line = " ".join(str(exc).split()) or type(exc).__name__
            app.call_from_thread(syncer.ended, line, True, remote)
            return
        app.call_from_thread(syncer.ended, summary(result), False, remote)

    return body
