"""The inspector as a person sees it, in Debian's Chromium (headless, Selenium, chromedriver) at
1280x800 and 1920x1080: the list and the detail fill the window with no horizontal scroll, the list
shows the exchanges made through the stack (and no favicon request), the keyboard moves and opens,
and the "changed" marks sit exactly on what the proxy changed (proxy/inspect/changes.py), checked
through the DOM. Screenshots go to $GTP_ARTIFACTS (default: the test's tmp_path); the test prints
where."""

import json
import os
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import openai
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.servers import mock_gemini, proxy_instance
from tests.test_inspect import MODEL, WEATHER
from tests.test_inspect_browser import chromium

LONG = "x" * 1500  # one unbroken word: it must wrap in its own box, not widen the page
SCHEMA = "/tools/0/functionDeclarations/0/parameters/properties/days/description"
# The marks, by body, of the tool loop's two turns and the chat request (JSON Pointers: changes.py).
SECOND_TURN = {"body-gemini-request": {SCHEMA, "/contents/1/parts/0/thoughtSignature"},
               "body-client-request": {"/tools/0/parameters/properties/days/exclusiveMinimum",
                                       "/tools/0/parameters/additionalProperties"},
               "body-gemini-answer": set(), "body-client-answer": set()}
FIRST_TURN = {**SECOND_TURN, "body-gemini-request": {SCHEMA}}
CHAT = {"body-gemini-request": {"/tools/0/functionDeclarations/0/name"},
        "body-client-request": {"/tools/0/function/name"}, "body-gemini-answer": set(), "body-client-answer": set()}
LAYOUT = """
const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; };
const page = document.scrollingElement;
return {scrollWidth: page.scrollWidth, clientWidth: page.clientWidth, scrollHeight: page.scrollHeight,
        clientHeight: page.clientHeight, width: innerWidth, height: innerHeight, header: box("header"),
        list: box("#list-pane"), detail: box("#detail-pane"),
        wide: [...document.querySelectorAll("#list-pane, #detail-pane, #detail-pane pre, #detail-pane dd, " +
                                            "#decisions li")]
          .filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.id || e.tagName)};
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A front-end without client keys (one user on loopback), three exchanges made through it: a tool
    loop's two turns (schema repairs, a restored signature) and a chat request with a renamed tool."""
    tmp = tmp_path_factory.mktemp("layout")
    mock, murl = mock_gemini(tmp)
    proc, url = proxy_instance(tmp, "proxy", murl)
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused")
        r1 = client.responses.create(model=MODEL, input="call get_weather city=Paris", tools=[WEATHER])
        call = r1.output[-1]
        client.responses.create(model=MODEL, tools=[WEATHER], previous_response_id=r1.id,
                                input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18C"}])
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hello " + LONG}], tools=[
            {"type": "function", "function": {"name": "look up", "description": "Looks up " + LONG, "parameters": {
                "type": "object", "properties": {"q": {"type": "string"}}}}}])
        with urllib.request.urlopen(url + "/favicon.ico", timeout=10) as r:  # a browser's own request
            assert r.status == 204
        yield url
    finally:
        proc.stop()
        mock.stop()


@pytest.fixture
def artifacts(tmp_path, capsys):
    where = Path(os.environ.get("GTP_ARTIFACTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    yield where
    with capsys.disabled():
        print(f"\n[inspector screenshots: {where}]")


def journal(url: str) -> list[dict]:
    with urllib.request.urlopen(url + "/inspect/api/exchanges", timeout=10) as r:
        return json.loads(r.read())["exchanges"]


def check_layout(driver) -> dict:
    m = driver.execute_script(LAYOUT)
    assert m["scrollWidth"] <= m["clientWidth"], m  # no horizontal scroll
    assert m["scrollHeight"] <= m["clientHeight"], m  # nor a page that scrolls: the panes do
    assert m["wide"] == [], m  # long lines wrap inside their boxes
    for pane in (m["list"], m["detail"]):
        assert abs(pane["top"] - m["header"]["bottom"]) <= 2 and abs(pane["bottom"] - m["height"]) <= 2, m
        assert pane["height"] >= m["height"] - m["header"]["height"] - 2, m
    assert abs(m["list"]["left"]) <= 1 and abs(m["detail"]["right"] - m["width"]) <= 1, m
    assert abs(m["list"]["width"] + m["detail"]["width"] - m["width"]) <= 2, m
    assert m["list"]["width"] >= 0.3 * m["width"] and m["detail"]["width"] >= 0.4 * m["width"], m
    return m


def marked(driver) -> dict[str, set[str]]:
    """Each body's marks: the pointers its marked lines start (data-mark), as the DOM has them."""
    return {pre: set(driver.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' .changed')].map((e) => e.dataset.mark)", "#" + pre))
        for pre in SECOND_TURN}


def opened(driver, wait, row_id: str) -> None:
    wait.until(lambda d: d.find_element(By.ID, "detail").is_displayed()
               and d.find_elements(By.CSS_SELECTOR, f'#exchanges tr.open[data-id="{row_id}"]')
               and d.find_element(By.ID, "body-client-request").text)


@pytest.mark.parametrize("size", ["1280,800", "1920,1080"])
def test_the_inspector_fills_the_window_and_marks_what_the_proxy_changed(served, artifacts, size):
    url = served
    driver = chromium(size)
    name = size.replace(",", "x")
    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {  # the viewport itself, not the window
            "width": int(size.split(",")[0]), "height": int(size.split(",")[1]), "deviceScaleFactor": 1,
            "mobile": False})
        wait = WebDriverWait(driver, 20)
        driver.get(url + "/inspect")
        wait.until(lambda d: d.find_element(By.ID, "live").text == "live")
        rows = wait.until(lambda d: len(r := d.find_elements(By.CSS_SELECTOR, "#exchanges tbody tr")) >= 3 and r)
        assert [r.get_attribute("data-id") for r in rows] == [e["id"] for e in journal(url)]
        assert len(rows) == 3 and all("favicon" not in r.text for r in rows)  # the browser's and ours
        assert "POST /v1/chat/completions" in rows[0].text and "POST /v1/responses" in rows[1].text
        m = check_layout(driver)
        assert (m["width"], m["height"]) == tuple(int(v) for v in size.split(","))
        assert not driver.find_element(By.ID, "detail").is_displayed()
        assert driver.find_element(By.ID, "empty").is_displayed()  # the detail pane says what to do
        driver.save_screenshot(str(artifacts / f"inspect-{name}-list.png"))

        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys("j")  # the first row
        assert driver.switch_to.active_element == rows[0]
        driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN, "j")  # the arrow and j: the third
        assert driver.switch_to.active_element == rows[2]
        driver.switch_to.active_element.send_keys("k")
        assert driver.switch_to.active_element == rows[1]  # the tool loop's second turn
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        opened(driver, wait, rows[1].get_attribute("data-id"))
        assert driver.switch_to.active_element == rows[1]  # the keyboard stays in the list
        assert marked(driver) == SECOND_TURN
        sig = driver.find_element(By.CSS_SELECTOR, '#body-gemini-request .changed[data-op="added"]'
                                                   '[data-path="/contents/1/parts/0/thoughtSignature"]')
        assert '"thoughtSignature":' in sig.text
        dropped = driver.find_element(By.CSS_SELECTOR, '#body-client-request .changed[data-op="removed"]'
                                                       '[data-path$="/additionalProperties"]')
        assert dropped.text.strip() == '"additionalProperties": false'
        assert "exclusiveMinimum at /properties/days moved into the description" in \
            driver.find_element(By.ID, "decisions").text
        check_layout(driver)
        driver.save_screenshot(str(artifacts / f"inspect-{name}-second-turn.png"))

        driver.switch_to.active_element.send_keys("j")  # with the detail open, it follows
        opened(driver, wait, rows[2].get_attribute("data-id"))
        wait.until(lambda d: marked(d) == FIRST_TURN)
        driver.switch_to.active_element.send_keys("g")  # the first row: the chat request, long lines
        opened(driver, wait, rows[0].get_attribute("data-id"))
        wait.until(lambda d: marked(d) == CHAT)
        assert LONG in driver.find_element(By.ID, "body-client-request").text
        check_layout(driver)
        driver.save_screenshot(str(artifacts / f"inspect-{name}-chat.png"))
        driver.switch_to.active_element.send_keys("G")
        assert driver.switch_to.active_element == rows[2]

        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: not d.find_element(By.ID, "detail").is_displayed())
        assert driver.switch_to.active_element == rows[2] and not driver.find_elements(By.CSS_SELECTOR, "tr.open")
        driver.switch_to.active_element.send_keys("/")
        assert driver.switch_to.active_element.get_attribute("name") == "session"
        driver.switch_to.active_element.send_keys(Keys.ESCAPE, "j")  # out of the field, back to the list
        assert driver.switch_to.active_element.tag_name == "tr"

        requested = set()
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                requested.add(urlparse(message["params"]["request"]["url"]).path)
        assert "/inspect/static/favicon.svg" in requested and "/favicon.ico" not in requested, requested
        assert [e["path"] for e in journal(url) if "favicon" in e["path"]] == []  # none of it journaled
    finally:
        driver.quit()
