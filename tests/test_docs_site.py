"""The docs site (mkdocs.yml, docs/): it builds with --strict (a broken link or anchor fails), every page
is in the nav, the configuration page lists every option of proxy/options.py and its committed table is
the one the build renders, and the built site loads nothing from the network."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from proxy.options import OPTIONS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _hook():
    spec = importlib.util.spec_from_file_location("options_page", DOCS / "hooks" / "options_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_files(nav) -> list[str]:
    out = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out += _nav_files(value) if isinstance(value, list) else [value]
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={"NO_MKDOCS_2_WARNING": "1",
                                                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_site_builds_strict(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "configuration" / "index.html").is_file()


def test_every_page_is_in_the_nav() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    in_nav = set(_nav_files(config["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "hooks" not in p.parts}
    assert pages - in_nav == set(), "pages missing from mkdocs.yml's nav"
    assert in_nav - pages == set(), "nav entries without a page"


def test_the_configuration_page_lists_every_option(site: Path) -> None:
    page = (site / "configuration" / "index.html").read_text()
    for o in OPTIONS:
        if o.serve or o.mitm:
            assert f"--{o.name}" in page, o.name
        if o.addon_name:
            assert o.addon_name in page, o.addon_name


def test_the_committed_configuration_table_is_the_generated_one() -> None:
    committed = (DOCS / "configuration.md").read_text()
    assert committed == _hook().splice(committed), "run: python docs/hooks/options_page.py"


def test_the_built_site_needs_no_network(site: Path) -> None:
    """No page loads a script, style, font, image or frame from another host (theme.font: false; no CDN)."""
    fetched = re.compile(r"""<(?:script|img|iframe|source)\b[^>]*\ssrc=["']?((?:https?:)?//[^"' >]+)"""
                         r"""|<link\b[^>]*\shref=["']?((?:https?:)?//[^"' >]+)""")
    pages = list(site.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        found = [m.group(0) for m in fetched.finditer(page.read_text())]
        assert found == [], (page, found)
    for css in site.rglob("*.css"):
        assert not re.search(r"@import\s+url\(\s*[\"']?https?:", css.read_text()), css


def test_the_benchmarks_page_has_its_plots(site: Path) -> None:
    page = (site / "benchmarks" / "index.html").read_text()
    assert page.count("<svg") >= 3 and "gtp-chart" in page
