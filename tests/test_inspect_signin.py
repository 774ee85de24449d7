"""The inspector's sign-in: the key is POSTed by its form (or as JSON), never taken from a URL; the
cookie stands for the key under a secret from the sealing carrier key, so it survives a restart and
`gemini-tool-proxy carrier-key --rotate` plus a restart voids it with no client key changed. The
sign-in in a real browser: here and tests/test_inspect_browser.py."""

import json
import subprocess
import sys
import urllib.parse

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.servers import mock_gemini, proxy_instance
from tests.test_inspect_browser import browser  # noqa: F401 - the fixture: Chromium as that test runs it
from tests.test_request_guard import send

KEY = "signin-client-key-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("signin")
    mock, murl = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "proxy", murl, "--api-key", KEY, "--log-format", "json")
    yield tmp, murl, proc, url
    proc.stop()
    mock.stop()


def sign_in(url: str, key: str, *, form: bool = True) -> tuple[int, dict, bytes]:
    body = urllib.parse.urlencode({"key": key}).encode() if form else json.dumps({"key": key}).encode()
    kind = "application/x-www-form-urlencoded" if form else "application/json"
    return send(url, "POST", "/inspect", body, {"content-type": kind, "origin": url})


def test_the_inspector_signs_in_by_post_only(served):
    tmp, _, proc, url = served
    status, headers, page = sign_in(url, "wrong-key-0123456789abc")
    assert status == 401 and b"admits no one" in page and "set-cookie" not in {h.lower() for h in headers}
    for form in (True, False):
        status, headers, _ = sign_in(url, KEY, form=form)
        assert status == 303 and headers["Location"] == "/inspect"
        cookie = headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and KEY not in cookie
        jar = cookie.split(";", 1)[0]
        assert send(url, "GET", "/inspect/api/exchanges", headers={"cookie": jar})[0] == 200
    # The old sign-in (the key in the URL) takes no key: the browser goes to the form, with no cookie.
    status, headers, _ = send(url, "GET", f"/inspect?key={KEY}")
    assert status == 303 and headers["Location"] == "/inspect" and "Set-Cookie" not in headers
    status, _, answer = send(url, "GET", f"/inspect/api/exchanges?key={KEY}")
    assert status == 401 and b"sign in at /inspect" in answer
    # A page on another origin cannot sign this browser in (to the attacker's key, say).
    status, _, _ = send(url, "POST", "/inspect", urllib.parse.urlencode({"key": KEY}).encode(),
                        {"content-type": "application/x-www-form-urlencoded", "origin": "http://attacker.example"})
    assert status == 403
    assert KEY not in proc.logs()


def test_a_sign_in_cookie_ends_with_a_rotated_carrier_key(tmp_path):
    """The cookie is made under the sealing carrier key: it survives a restart (and works on every
    instance sharing the keys file), and `carrier-key --rotate` plus a restart voids it, with the
    client key unchanged."""
    mock, murl = mock_gemini(tmp_path)
    try:
        proc, url = proxy_instance(tmp_path, "first", murl, "--api-key", KEY)
        jar = sign_in(url, KEY)[1]["Set-Cookie"].split(";", 1)[0]
        proc.stop()
        proc, url = proxy_instance(tmp_path, "restarted", murl, "--api-key", KEY)
        assert send(url, "GET", "/inspect/api/exchanges", headers={"cookie": jar})[0] == 200
        proc.stop()
        rotate = subprocess.run([sys.executable, "-m", "proxy", "carrier-key", "--rotate", "--file",
                                 str(tmp_path / "carrier-keys")], capture_output=True, text=True, timeout=60)
        assert rotate.returncode == 0, rotate.stderr
        proc, url = proxy_instance(tmp_path, "rotated", murl, "--api-key", KEY)
        assert send(url, "GET", "/inspect/api/exchanges", headers={"cookie": jar})[0] == 401
        assert sign_in(url, KEY)[0] == 303  # the same key signs in again
        proc.stop()
    finally:
        mock.stop()


def test_the_sign_in_page_has_its_style_sheet(served):
    _, _, _, url = served
    status, headers, _ = send(url, "GET", "/inspect/static/inspect.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")
    assert send(url, "GET", "/inspect/api/exchanges")[0] == 401  # the journal stays shut


def test_a_browser_is_signed_out_by_a_rotated_carrier_key(browser, tmp_path):  # noqa: F811 - the fixture
    """In Chromium: the form signs in; after a restart the browser is still signed in (cookies ignore
    ports, so the new instance on another port gets it); after `carrier-key --rotate` and a restart it
    is shown the form again, and signs in anew."""
    mock, murl = mock_gemini(tmp_path)
    proc = None
    try:
        proc, url = proxy_instance(tmp_path, "first", murl, "--api-key", KEY)
        browser.get(url + "/inspect")
        browser.find_element(By.ID, "key").send_keys(KEY + Keys.ENTER)
        WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "exchanges"))
        assert KEY not in browser.current_url
        proc.stop()
        for name, signed_in in (("restarted", True), ("rotated", False)):
            if not signed_in:
                subprocess.run([sys.executable, "-m", "proxy", "carrier-key", "--rotate", "--file",
                                str(tmp_path / "carrier-keys")], check=True, capture_output=True, timeout=60)
            proc, url = proxy_instance(tmp_path, name, murl, "--api-key", KEY)
            browser.get(url + "/inspect")
            assert bool(browser.find_elements(By.ID, "exchanges")) is signed_in, name
            assert bool(browser.find_elements(By.ID, "key")) is not signed_in, name
            if name == "rotated":
                browser.find_element(By.ID, "key").send_keys(KEY + Keys.ENTER)
                WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "exchanges"))
            proc.stop()
            proc = None
    finally:
        if proc is not None:
            proc.stop()
        mock.stop()
