"""The one folder optseq keeps its caches in (the worktrees of branch levers, the console's parsed stylesheet):
platformdirs' user cache folder, `$XDG_CACHE_HOME/optseq`, else `~/.cache/optseq` on Linux, each platform's own
place elsewhere. Textual imports platformdirs already, so the console pays nothing for asking it."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path | None:
    """optseq's cache folder; None where there is neither `$XDG_CACHE_HOME` nor a home to put one under."""
    import platformdirs

    if not os.environ.get("XDG_CACHE_HOME") and os.path.expanduser("~") == "~":
        return None
    return Path(platformdirs.user_cache_dir("optseq"))
