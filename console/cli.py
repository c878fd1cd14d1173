"""optseq command line."""
import sys


def main(argv=None) -> int:
    print("optseq: core not built yet", file=sys.stderr)
    return 2
