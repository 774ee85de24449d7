"""/inspect in a real browser: Debian's Chromium driven by Selenium through Debian's chromedriver.
The browser signs in once, a tool loop runs with the openai SDK, its exchanges appear live, the
keyboard opens one, and the page shows the repaired schema keyword and the restored signature.
Screenshots go to test-artifacts/. Every request the browser makes stays on loopback."""

import json
import shutil
from pathlib import Path
from urllib.parse import urlparse

import openai
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.servers import mock_gemini, proxy_instance
from tests.test_inspect import KEY, MODEL, WEATHER

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"



def chromium(window: str = "1440,900", resolve: str = "") -> webdriver.Chrome:
    """Debian's Chromium, headless, every name but loopback unresolvable (`resolve`: rules before that,
    e.g. "MAP attacker.test 127.0.0.1, ")."""
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        raise RuntimeError("chromium and chromium-driver are not installed: scripts/test.sh installs them")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--window-size={window}",
                 f"--host-resolver-rules={resolve}MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))
    driver.set_page_load_timeout(30)
    return driver


@pytest.fixture
def browser():
    driver = chromium()
    yield driver
    driver.quit()


def shot(driver, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"inspect-{name}.png"))


def test_a_user_finds_why_the_proxy_did_what_it_did(browser, tmp_path):
    mock, murl = mock_gemini(tmp_path)
    proc, url = proxy_instance(tmp_path, "proxy", murl, "--api-key", KEY)
    try:
        wait = WebDriverWait(browser, 20)
        browser.get(url + "/inspect")
        assert browser.find_element(By.ID, "key")  # not signed in: the sign-in form
        browser.find_element(By.ID, "key").send_keys(KEY + Keys.ENTER)
        wait.until(lambda d: d.current_url == url + "/inspect")
        assert KEY not in browser.current_url and KEY not in browser.page_source
        wait.until(lambda d: d.find_element(By.ID, "live").text == "live")
        shot(browser, "1-empty")

        client = openai.OpenAI(base_url=url + "/v1", api_key=KEY)
        r1 = client.responses.create(model=MODEL, input="call get_weather city=Paris", tools=[WEATHER])
        call = r1.output[-1]
        client.responses.create(model=MODEL, tools=[WEATHER], previous_response_id=r1.id,
                                input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18C"}])
        rows = wait.until(lambda d: (r := d.find_elements(By.CSS_SELECTOR, "#exchanges tbody tr")) and len(r) >= 2
                          and r)
        assert "get_weather" in rows[1].text and MODEL in rows[0].text  # arrived live, newest first
        shot(browser, "2-live")

        body = browser.find_element(By.TAG_NAME, "body")
        body.send_keys("j")  # the keyboard: the first row (the second turn), then open it
        assert browser.switch_to.active_element == rows[0]
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "detail").is_displayed())
        decisions = wait.until(lambda d: d.find_element(By.ID, "decisions").text)
        assert "exclusiveMinimum at /properties/days moved into the description" in decisions
        assert f"call {call.call_id}: record restored from the store with its thought signature" in decisions
        gemini_request = browser.find_element(By.ID, "body-gemini-request")
        marked = [e.text for e in gemini_request.find_elements(By.CSS_SELECTOR, ".changed")]
        assert any("thoughtSignature" in line for line in marked)  # the proxy's change, highlighted
        assert "previous_response_id" in browser.find_element(By.ID, "body-client-request").text
        shot(browser, "3-exchange")

        browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: not d.find_element(By.ID, "detail").is_displayed())
        browser.find_element(By.TAG_NAME, "body").send_keys("/")
        active = browser.switch_to.active_element
        assert active.get_attribute("name") == "session"
        browser.find_element(By.NAME, "model").send_keys("no-such-model")
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#exchanges tbody tr"))
        shot(browser, "4-filtered")

        hosts = set()
        for entry in browser.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                hosts.add(urlparse(message["params"]["request"]["url"]).hostname)
        assert hosts and hosts <= {"127.0.0.1"}, hosts
    finally:
        proc.stop()
        mock.stop()
