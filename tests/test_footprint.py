"""scripts/footprint.py: its counting wrapper around a real `serve` and a real null hop (a request
that ran nothing, or a wrapper that counted nothing, fails here), and how code objects are sorted
into packages."""

import sysconfig

from scripts.footprint import PACKAGES, ROOT, measure, package, summary


def test_a_code_objects_package_is_its_files() -> None:
    assert package(str(ROOT / "proxy" / "front" / "app.py")) == "proxy"
    assert package("/v/lib/python3.13/site-packages/aiohttp/web_app.py") == "aiohttp"
    assert package("/v/lib/python3.13/site-packages/pydantic/main.py") == "other"
    assert package("/opt/gtp/lib/python3.13/site-packages/proxy/front/app.py") == "proxy"  # the installed wheel
    assert package(sysconfig.get_paths()["stdlib"] + "/asyncio/events.py") == package("<frozen abc>") == "stdlib"
    assert package(str(ROOT / "scripts" / "null_hop.py")) == package("<string>") == "other"


def test_functions_on_every_request_are_those_run_at_least_once_a_request() -> None:
    rows = [[str(ROOT / "proxy" / "a.py"), "a", 1, 10], [str(ROOT / "proxy" / "b.py"), "b", 1, 9],
            ["/v/site-packages/aiohttp/x.py", "x", 1, 30]]
    got = summary(rows, 10)
    assert got["calls"] == 4.9 and got["every"] == 2
    assert {p: got[p] for p in PACKAGES} == {"proxy": 1, "aiohttp": 1, "stdlib": 0, "other": 0}


def test_a_real_proxy_runs_more_python_than_the_hop() -> None:
    (row,) = measure(["chat"], ["small"], 10)
    proxy, hop = row["proxy"], row["hop"]
    assert proxy["proxy"] > 50 and proxy["aiohttp"] > 50, proxy  # the route, the translation, aiohttp's server
    assert hop["proxy"] == 0 and hop["aiohttp"] > 50, hop  # the hop is aiohttp alone
    assert proxy["calls"] > hop["calls"] > 0
    names = {q for _, q, _, n in row["functions"] if n >= 10}
    assert "chat_completions" in names and "front_middleware" in names
