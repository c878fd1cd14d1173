"""A store made by a writer's first write (Sequencer.open's mode "create"): till then the writer reads the missing
store as an empty one, so a write refused for bad input (a `decide` without `--why`, an unknown lever, a ref that
names nothing) leaves no folder behind, and a typo'd --db is refused again by the next read instead of showing a
fresh plan."""
from __future__ import annotations

import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path

from optseq.state.store.layout import holds_store
from optseq.state.store.store import Store


def made_later(directory, mode: str) -> bool:
    """Whether an open of `mode` leaves the store to its first write: "create" where no store is yet, in a folder
    or where nothing is (a file or a broken link in its place is refused by the write open, in its one line)."""
    path = Path(directory).expanduser()
    return mode == "create" and not holds_store(path) and (path.is_dir() or not (path.exists() or path.is_symlink()))


class FirstWrite:
    """Mixed into `Sequencer` (state/sequencer.py), which gives it `store`, `lock`, `machine`, `_depth`, `_synced`,
    `_catch_up`, `_load`, `_keep_snapshot` and `on_made` (called once the store is made), and sets `_creates` (directory, on_wait) where the store is to be
    made, and `_first`, the transaction a writing() opens at its first append, to None."""

    def _first_write(self) -> None:
        """Make the store a "create" open left for now, and open the transaction of the writing() inside which it
        is made there, caught up with what another process may have written meanwhile."""
        if self._creates is None:
            return
        with self.lock:
            if self._creates is None:  # another thread's write made it while this one waited for the lock
                return
            directory, on_wait = self._creates
            store = Store.open(directory, mode="write", on_wait=on_wait)
            self.store.close()
            self.store, self._creates = store, None
            if self._first is not None:
                self._first.enter_context(store.batch())
                self._catch_up()
            if self.on_made is not None:
                self.on_made()

    @contextmanager
    def _first_writing(self):
        """writing() where no store is yet: the block checks its input against the empty store it reads, and its
        first append makes the store and the transaction (_first_write); a block refused before it made nothing."""
        with self.lock:
            outer = self._depth == 0
            if outer:
                self._first = ExitStack()
            self._depth += 1
            try:
                try:
                    yield
                finally:
                    self._depth -= 1
                if outer and self._creates is None:
                    self._keep_snapshot()
            except BaseException:
                if outer:
                    first, self._first = self._first, None
                    if self._creates is None:  # made: the store rolls back, and so does the machine
                        first.__exit__(*sys.exc_info())
                        self.store.reload()
                        self.machine = self._load()
                raise
            if outer:
                first, self._first = self._first, None
                try:
                    first.close()  # the commit
                except BaseException:
                    self.store.reload()
                    self.machine = self._load()
                    raise
                if self._creates is None:
                    self._synced = self.store.ends()
