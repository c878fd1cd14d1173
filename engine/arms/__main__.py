"""`python -m optseq.engine.arms`: what optseq launches for a command-pair lever (its spec in OPTSEQ_ARMS)."""
from __future__ import annotations

import json
import os
import sys

from optseq.engine import kit


def main() -> int:
    kit.watch_parent()
    raw = os.environ.get("OPTSEQ_ARMS")
    if not raw:
        kit.fail("OPTSEQ_ARMS is not set: optseq runs this driver for a lever declared with arms in its plan")
        return 2
    try:
        spec = json.loads(raw)
    except ValueError as exc:
        kit.fail(f"OPTSEQ_ARMS is not JSON ({exc})")
        return 2
    if "points" in spec:  # a screen's design runs, one process each
        from optseq.engine.arms import points

        return points.run(spec)
    from optseq.engine.arms.driver import check, run

    return check(spec) if sys.argv[1:] == ["--check"] else run(spec)


if __name__ == "__main__":
    sys.exit(main())
