"""The house's floors, read from the code's own imports (issue 63): every arrow points down.

A room is a top-level module or package of `proxy/` (`proxy/journal/`, `proxy/metrics.py`); an arrow
is any import of one room by another, the late ones inside functions included (they are arrows too,
only hidden). FLOORS lists the rooms from the top of the house to its bottom; a room may import only
rooms on floors below its own. A new room has to be given a floor here, which is the point: someone
decides where it stands.
"""

import ast
import re
from pathlib import Path

import pytest

PROXY = Path(__file__).resolve().parents[1] / "proxy"

# Top to bottom. A room imports only what stands below it; rooms on one floor do not import each other.
FLOORS: list[tuple[str, set[str]]] = [
    ("entry points", {"__main__", "addon_script"}),
    ("the commands", {"cli"}),
    ("a command's helper", {"usage_command"}),
    ("the mitmproxy addons", {"intercept"}),
    ("composition root", {"front"}),
    ("client protocols, the inspector", {"responses", "chat", "anthropic", "gemini", "interactions", "inspect"}),
    ("the front-end's kit", {"server"}),
    ("model rules; the store", {"model_rules", "store"}),
    ("upstream peers; sessions", {"upstream", "session"}),
    ("core: client history to Gemini", {"to_gemini"}),
    ("core: Gemini answers to events; text dialects; the mock", {"from_gemini", "dialects", "mock"}),
    ("core: tools; thought signatures", {"tools", "signatures"}),
    ("core: schemas", {"schema"}),
    ("the journal (a leaf anyone notes into); usage; quota board; config file",
     {"journal", "usage", "quota_board", "config_file"}),
    ("wire models; metrics; options; the CA", {"wire", "metrics", "options", "ca"}),
    ("ground", {"errors", "logs", "ids", "fast_json", "redact", "pattern_rules", "defaults",
                "certs_dir", "gc_tuning", "malloc_tuning", "log_limits"}),
]
FLOOR = {room: i for i, (_, rooms) in enumerate(FLOORS) for room in rooms}


def room_of(path: Path) -> str:
    rel = path.relative_to(PROXY)
    return rel.parts[0].removesuffix(".py")


def imported_rooms(code: str, package: list[str], proxy: Path = PROXY) -> list[tuple[str, int, bool]]:
    """(room, line, late) for every import of a room of `proxy` in `code`, a module of `package`
    (e.g. ["proxy", "journal"]: relative imports are resolved against it); `late`: inside a function."""
    tree = ast.parse(code)
    top_level = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolved against the module's package
                module = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
            # `from proxy import ids, metrics`: each name is the module imported
            names = [f"{module}.{a.name}" for a in node.names] if module == "proxy" else [module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "proxy" and len(parts) > 1 and ((proxy / parts[1]).is_dir()
                                                           or (proxy / f"{parts[1]}.py").exists()):  # not __version__
                found.append((parts[1], node.lineno, id(node) not in top_level))
    return found


def arrows() -> list[tuple[str, str, str, int, bool]]:
    """(from room, to room, file, line, late) for every import of one room by another."""
    found = []
    for path in sorted(PROXY.rglob("*.py")):
        src = room_of(path)
        package = list(path.relative_to(PROXY.parent).parts[:-1])
        found += [(src, dst, str(path.relative_to(PROXY)), line, late)
                  for dst, line, late in imported_rooms(path.read_text(), package) if dst != src]
    return found


def rooms() -> set[str]:
    return {room_of(p) for p in PROXY.rglob("*.py")} - {"__init__"}


def test_every_room_has_a_floor() -> None:
    missing = sorted(rooms() - FLOOR.keys())
    assert not missing, f"give these rooms a floor in FLOORS: {missing}"
    gone = sorted(FLOOR.keys() - rooms())
    assert not gone, f"FLOORS names rooms that no longer exist: {gone}"


def test_every_arrow_points_down() -> None:
    up = [f"{file}:{line} {src} -> {dst}{' (late import)' if late else ''}"
          for src, dst, file, line, late in arrows() if dst in FLOOR and FLOOR[dst] <= FLOOR[src]]
    assert not up, "imports that point up or sideways:\n" + "\n".join(up)


def test_no_circle() -> None:
    """Implied by the floors, checked on its own so the message names the circle if FLOORS is wrong."""
    graph: dict[str, set[str]] = {}
    for src, dst, *_ in arrows():
        graph.setdefault(src, set()).add(dst)
    seen: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(room: str, path: list[str]) -> None:
        seen[room] = 1
        for nxt in sorted(graph.get(room, ())):
            if seen.get(nxt) == 1:
                pytest.fail("a circle: " + " -> ".join([*path[path.index(nxt):], nxt]))
            if nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[room] = 2

    for room in sorted(graph):
        if room not in seen:
            visit(room, [room])


def test_the_reader_sees_late_and_relative_imports() -> None:
    """The graph is only true if an import inside a function counts, a relative one resolves to its
    room, and `from proxy import name` is an arrow only when the name is a room (not __version__)."""
    code = ("from proxy import ids, __version__\n"
            "def f():\n    from proxy.server import auth\n    from .. import metrics\n    from .ring import x\n")
    assert imported_rooms(code, ["proxy", "journal"]) == [
        ("ids", 1, False), ("server", 3, True), ("metrics", 4, True), ("journal", 5, True)]


def test_the_readmes_layout_shows_the_floors() -> None:
    """The README's layout section names every folder of proxy/, from the top of the house down."""
    readme = (PROXY.parent / "README.md").read_text()
    section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = []
    for room in re.findall(r"proxy/(\w+)[/.]", section):
        if room not in named:
            named.append(room)
    folders = {p.name for p in PROXY.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert not folders - set(named), f"the README's layout leaves out {sorted(folders - set(named))}"
    floors = [FLOOR[r] for r in named if r in FLOOR]
    out_of_order = [(a, b) for a, b in zip(named, named[1:], strict=False)
                    if a in FLOOR and b in FLOOR and FLOOR[b] < FLOOR[a]]
    assert floors == sorted(floors), f"the README lists these above what they stand on: {out_of_order}"
