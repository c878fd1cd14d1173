"""`optseq` with no subcommand: check for a terminal, then run the console on the plan and store."""
from __future__ import annotations

import sys
from pathlib import Path

NO_TTY = ("optseq: the console needs a terminal (stdin and stdout must be a TTY); "
          "use `optseq --run TARGET` to run levers or `optseq status` to read the plan")


def run_tui(plan_path: Path | str, db_dir: Path | str, parallel: int = 1) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(NO_TTY, file=sys.stderr)
        return 2
    from optseq.console import collector
    from optseq.console.tui.app import make_app

    app = make_app(plan_path, db_dir, parallel=parallel)
    collector.collecting()  # loaded: the console runs long and makes garbage (console/collector.py)
    app.run()
    return app.return_code or 0
