"""docs/performance.md is written by several commands, each owning one `<!-- section:NAME -->` of it."""
from __future__ import annotations

from pathlib import Path

from optseq.state import atomic


def cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what platform knows of it: every section names it."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return cpu


class SectionError(ValueError):
    """A document whose markers for a section are not one pair; str() names the file and the section."""


def write_section(path: Path, section: str, name: str) -> None:
    """Put `section` in place of this section of the document, or append it; every other byte stays.

    One atomic replace (temp file beside it, fsync, os.replace). A document with the section's markers
    more than once, or only one of them, is refused with SectionError and left as it is.
    """
    path = Path(path)
    start, end = f"<!-- section:{name} -->", f"<!-- /section:{name} -->"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Performance\n"
    n_start, n_end = text.count(start), text.count(end)
    if n_start == n_end == 1 and text.index(start) < text.index(end):
        i, j = text.index(start), text.index(end) + len(end)
        text = text[:i] + section + text[j:]
    elif n_start == n_end == 0:
        text = (text if text.endswith("\n") else text + "\n") + "\n" + section + "\n"
    else:
        raise SectionError(f"{path}: the {name!r} section's markers are not one {start} … {end} pair; "
                           "fix the document by hand")
    atomic.replace(path, text.encode("utf-8"), mode=0o644, sync_dir="no")


def rows_of(settings: list, measure, progress=None) -> list:
    """`measure(setting)` for each setting in order, `progress(done, total)` told after each (a long table's rows)."""
    rows = []
    for setting in settings:
        rows.append(measure(setting))
        if progress:
            progress(len(rows), len(settings))
    return rows
