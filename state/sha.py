"""sha256 for the short keys optseq hashes on every start (a plan's key, a testbed's id, a definition's digest, the
console's CSS cache name), without hashlib: hashlib loads OpenSSL on import, about 2 ms and a tenth of what
`optseq status` spends beyond Python's own start. CPython's own sha256 gives the same digest; hashlib stays the
fallback where an interpreter lacks it, and the tool for large inputs (file hashes), where OpenSSL is faster."""
from __future__ import annotations

import sys

try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256
    else:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11's own; typeshed names _sha2 only
except ImportError:  # an interpreter without CPython's own modules
    from hashlib import sha256


def hex_digest(text: str) -> str:
    """The sha256 of `text` (UTF-8) in hex."""
    return sha256(text.encode("utf-8")).hexdigest()


__all__ = ["hex_digest", "sha256"]
