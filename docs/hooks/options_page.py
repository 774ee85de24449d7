"""MkDocs hook: pages generated from the code, so they cannot drift from it.

- docs/configuration.md: the block between `<!-- options:begin -->` and `<!-- options:end -->` is
  rendered from `proxy.options.OPTIONS` (grouped by the `# -- group --` comments of proxy/options.py)
  at build time. The committed file holds the same rendering, so it reads well on GitHub;
  tests/test_docs_site.py fails when the two differ. `python docs/hooks/options_page.py` rewrites it.
- docs/benchmarks.md (written by scripts/bench.sh): bar charts drawn as inline SVG from its own tables,
  inserted after each table they plot (no JavaScript, nothing fetched: the site builds and reads offline).
"""

from __future__ import annotations

import html
import math
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"
KINDS = {"text": "text", "list": "repeatable", "flag": "flag", "seconds": "seconds", "count": "count",
         "port": "port", "bytes": "bytes"}


def _options() -> tuple[Any, ...]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from proxy import options
    return options.OPTIONS


def groups() -> list[tuple[str, list[Any]]]:
    """The options in table order, under the section comments of proxy/options.py."""
    source = (ROOT / "proxy" / "options.py").read_text()
    group_of: dict[str, str] = {}
    current = "General"
    for line in source.splitlines():
        heading = re.match(r"\s*# -- (.+?) -{3,}", line)
        if heading:
            current = heading.group(1).strip()
            current = current[:1].upper() + current[1:]
        found = re.search(r'Option\("([a-z0-9-]+)"', line)
        if found:
            group_of.setdefault(found.group(1), current)
    out: list[tuple[str, list[Any]]] = []
    for o in _options():
        name = group_of.get(o.name, "Other")
        if not out or out[-1][0] != name:
            out.append((name, []))
        out[-1][1].append(o)
    return out


def _size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def _default(o: Any) -> str:
    value = o.default
    if value is None or value == () or value == []:
        return "—"
    if o.kind == "flag":
        return "off" if not value else "on"
    if o.kind == "bytes":
        return f"`{_size(value)}`"
    if o.kind == "seconds":
        return f"{value:g} s"
    if o.kind == "list":
        return ", ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def _cell(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "&#124;").replace("\n", " ")


def _code(text: str) -> str:
    # a pipe inside a code span still splits a table cell: write it as an entity inside <code>
    return f"<code>{_cell(text)}</code>"


def render() -> str:
    lines = []
    for name, opts in groups():
        lines += [f"### {name}", "",
                  "| command line | addon (`--set`) | kind | default | what it does |",
                  "|---|---|---|---|---|"]
        for o in opts:
            if o.serve or o.mitm:
                flag = _code(f"--{o.name}" + (f" {o.metavar}" if o.metavar else ""))
                where = [w for w, on in (("serve", o.serve), ("mitm", o.mitm)) if on]
                flag += f" <br><small>{' · '.join(where)}</small>"
            else:
                flag = "— <br><small>addon only</small>"
            addon = _code(o.addon_name) if o.addon_name else "— <br><small>serve only</small>"
            kind = KINDS[o.kind] + (f": {', '.join(f'`{c}`' for c in o.choices)}" if o.choices else "")
            lines.append(f"| {flag} | {addon} | {kind} | {_default(o)} | {_cell(o.help)} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def splice(page: str) -> str:
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[:start] + "\n\n" + render() + "\n" + page[end:]


# -- benchmarks: inline SVG bar charts from the page's own tables --------------------------------------

def _tables(markdown: str) -> list[tuple[int, list[str], list[list[str]]]]:
    """(index just after the table, header cells, rows) of every pipe table."""
    out, lines, pos, i = [], markdown.split("\n"), 0, 0
    offsets = []
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| :]+\|$", lines[i + 1]):
            header = [c.strip() for c in lines[i].strip("|").split("|")]
            j, rows = i + 2, []
            while j < len(lines) and lines[j].startswith("|"):
                rows.append([c.strip() for c in lines[j].strip("|").split("|")])
                j += 1
            out.append((offsets[j] if j < len(lines) else len(markdown), header, rows))
            i = j
        else:
            i += 1
    return out


def _number(text: str) -> float | None:
    m = re.match(r"^[+]?(-?\d+(?:\.\d+)?)", text.replace("×", "").strip())
    return float(m.group(1)) if m else None


def bar_chart(title: str, bars: list[tuple[str, float]], unit: str) -> str:
    """A horizontal bar chart as inline SVG (theme colours through CSS variables)."""
    if not bars:
        return ""
    label_w, bar_w, row_h, top = 330, 360, 22, 30
    top_value = max(abs(v) for _, v in bars) or 1.0
    height = top + row_h * len(bars) + 10
    width = label_w + bar_w + 90
    parts = [f'<figure class="gtp-chart"><svg role="img" aria-label="{html.escape(title)}" viewBox="0 0 {width} '
             f'{height}" width="100%" style="max-width:{width}px" xmlns="http://www.w3.org/2000/svg">',
             f'<text x="0" y="18" font-weight="bold" fill="currentColor" font-size="14">{html.escape(title)}</text>']
    for k, (label, value) in enumerate(bars):
        y = top + k * row_h
        w = max(1.0, bar_w * abs(value) / top_value)
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" fill="currentColor" '
                     f'font-size="12">{html.escape(label)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" rx="2" '
                     f'fill="var(--md-accent-fg-color, #526cfe)" opacity="{0.55 if value < 0 else 0.9}"/>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 15}" fill="currentColor" font-size="12">'
                     f'{value:g} {html.escape(unit)}</text>')
    parts.append("</svg></figure>")
    return "\n" + "".join(parts) + "\n"


CHARTS = (  # (a column the table must have, value column, label columns, skip rows whose target has, title, unit)
    ("target", "added p50 ms", ("workload", "API", "target"), "direct", "Latency the proxy adds (p50)", "ms"),
    ("target", "CPU ms/req", ("workload", "API", "target"), "direct", "CPU per request", "ms"),
    ("beyond the hop ms, paired (goal ≤ 0.5 small, ≤ 1.0 large)", "beyond the hop ms, paired (goal ≤ 0.5 small, "
     "≤ 1.0 large)", ("workload", "API"), None, "Beyond a null aiohttp hop (goal ≤ 0.5 small, ≤ 1.0 large)", "ms"),
    ("mitmdump + addon", "CPU vs plain (goal ≤ 1.15)", ("MITM (native, TLS)", "mitmdump + addon"), None,
     "MITM addon CPU against plain mitmdump (goal ≤ 1.15)", "×"),
)


def benchmark_charts(markdown: str) -> str:
    inserts: list[tuple[int, str]] = []
    for end, header, rows in _tables(markdown):
        svg = ""
        for must, value_col, label_cols, skip, title, unit in CHARTS:
            if must not in header or value_col not in header or not all(c in header for c in label_cols):
                continue
            bars = []
            for row in rows:
                cells = dict(zip(header, row, strict=False))
                if skip and skip in cells.get("target", "").lower():
                    continue
                value = _number(cells.get(value_col, ""))
                if value is None or not math.isfinite(value):
                    continue
                bars.append((" · ".join(cells[c] for c in label_cols), value))
            svg += bar_chart(title, bars, unit)
        if svg:
            inserts.append((end, svg))
    for end, svg in reversed(inserts):
        markdown = markdown[:end] + svg + "\n" + markdown[end:]
    return markdown


# -- MkDocs events -------------------------------------------------------------------------------------

def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if page.file.src_uri == "configuration.md":
        return splice(markdown)
    if page.file.src_uri == "benchmarks.md":
        return benchmark_charts(markdown)
    return markdown


if __name__ == "__main__":  # rewrite docs/configuration.md's generated block from the option table
    target = ROOT / "docs" / "configuration.md"
    target.write_text(splice(target.read_text()))
    print(f"wrote {target}")
