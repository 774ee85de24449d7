"""One bench script's section of a shared document, replaced in place.

docs/benchmarks.md is written by several scripts and carries findings written by hand between their
sections; each script owns only the text between its two markers, so re-running one keeps the rest.
"""

import os
import platform
from pathlib import Path


def machine() -> str:
    """The machine a section was measured on, as every section of the document names it."""
    return (f"{platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
            f"Python {platform.python_version()}")


def put_section(doc: Path, start: str, end: str, section: str, *, head: str = "# Benchmarks\n") -> None:
    """Replace the text from `start` to `end` (both markers kept) with `section`, which must carry them;
    without the markers, append it. A missing document starts with `head`."""
    if not (section.startswith(start) and section.rstrip("\n").endswith(end)):
        raise ValueError("the section must begin with its start marker and end with its end marker")
    text = doc.read_text() if doc.exists() else head
    if start in text and end in text[text.index(start):]:
        at = text.index(start)
        text = text[:at] + section.rstrip("\n") + text[text.index(end, at) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
