"""optseq's core, in rooms: plan, lifecycle, store, runners, runs, calculus, report, bench; the sequencer on top."""
import sys

# msgspec (every record's type) imports typing_extensions, and with it inspect, dis and ast, only for the
# get_type_hints it falls back to typing's for when typing_extensions is absent: the same function from Python
# 3.11 on (typing_extensions' adds nothing with include_extras, which msgspec passes). Blocking it while msgspec
# loads takes 29M instructions of `optseq status`'s 361M. A process that has typing_extensions already is left as
# it is, and the block is lifted before anything else imports: the console's textual loads it whole just after.
if "msgspec" not in sys.modules and "typing_extensions" not in sys.modules:
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # None in sys.modules: an import refused
    try:
        import msgspec  # noqa: F401
    finally:
        if sys.modules["typing_extensions"] is None:  # an import refused leaves the None in place
            del sys.modules["typing_extensions"]
