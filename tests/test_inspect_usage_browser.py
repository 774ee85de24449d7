"""The inspector's Usage view in Debian's Chromium (headless, Selenium): answers given to the openai SDK
by a front-end with two client keys (one an --admin-key) over the mock, on two UTC days and two models,
show as one bar per day and model in the page's SVG with a cost point for every day of the range; the
table's rows and totals are GET /v1/usage's; the group toggle stacks by key; a key that is not an
admin's sees only its own. Screenshots go to test-artifacts/."""

import time
from datetime import UTC, datetime, timedelta

import openai
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from proxy.server.auth import scope_of
from proxy.usage.counters import MemoryCounters
from proxy.usage.ledger import Ledger
from proxy.usage.limits import key_id
from tests.harness import Stack
from tests.test_inspect_browser import chromium, shot

ADMIN, BOB = "admin-client-key-0123456789", "bob-client-key-0123456789ab"
FLASH, PRO = "gemini-2.5-flash", "gemini-2.5-pro"
# The UTC days the tests see, set when the module's stack starts (_days), not when the suite is collected:
# a suite that crossed midnight between the two signed in to a range the page no longer showed.
TODAY = datetime.now(UTC).date()
YESTERDAY = RANGE = ""
NEAR_MIDNIGHT = 120  # seconds: the module's tests take about 45; this close to midnight they wait for it


def _days() -> None:
    global TODAY, YESTERDAY, RANGE
    now = datetime.now(UTC)
    left = (datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1) - now).total_seconds()
    if left < NEAR_MIDNIGHT:  # (the answers, the page and the checks then all fall on the new day)
        time.sleep(left + 1)
    TODAY = datetime.now(UTC).date()
    YESTERDAY = (TODAY - timedelta(days=1)).isoformat()
    RANGE = f"?from={(TODAY - timedelta(days=6)).isoformat()}&to={TODAY.isoformat()}"


def kid(key: str) -> str:
    return key_id(scope_of(key))


def ask(stack: Stack, key: str, model: str, n: int = 1) -> None:
    client = openai.OpenAI(base_url=stack.url + "/v1", api_key=key, max_retries=0)
    for _ in range(n):
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hello"}])


@pytest.fixture(scope="module")
def stack():
    _days()
    # admins as serve passes them: the keys' scopes
    s = Stack(keys=[ADMIN, BOB], usage=Ledger(MemoryCounters(), admins=[scope_of(ADMIN)]))
    with pytest.MonkeyPatch.context() as mp:  # answers counted on yesterday's UTC day, as a day ago
        mp.setattr("proxy.usage.ledger.day_of", lambda: YESTERDAY)
        ask(s, ADMIN, FLASH)
        ask(s, BOB, FLASH)
    ask(s, ADMIN, FLASH, 2)
    ask(s, ADMIN, PRO)
    ask(s, BOB, FLASH)
    yield s
    s.close()


def usage(stack: Stack, key: str, groups: str) -> dict:
    import json
    import urllib.request
    req = urllib.request.Request(f"{stack.url}/v1/usage{RANGE}&group_by={groups}",
                                 headers={"authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def sign_in(driver, stack: Stack, key: str) -> WebDriverWait:
    wait = WebDriverWait(driver, 20)
    driver.get(stack.url + "/inspect")
    driver.find_element(By.ID, "key").send_keys(key + Keys.ENTER)
    wait.until(lambda d: d.current_url.startswith(stack.url + "/inspect") and d.find_elements(By.ID, "tab-usage"))
    driver.find_element(By.ID, "tab-usage").click()
    Select(driver.find_element(By.NAME, "days")).select_by_value("7")
    wait.until(lambda d: d.find_element(By.ID, "usage-source").text.startswith(RANGE[6:16]))
    return wait


def bars(driver) -> dict[tuple[str, str], int]:
    return {(day, series): int(n) for day, series, n in driver.execute_script(
        "return [...document.querySelectorAll('#usage-chart rect.bar')].map((b) => "
        "[b.dataset.day, b.dataset.series, b.dataset.tokens]);")}


def table(driver) -> tuple[list[list[str]], list[str]]:
    """The table's cells as the page shows them (read in one go: a reload replaces the rows)."""
    return driver.execute_script(
        "const cells = (tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText);"
        "return [[...document.querySelectorAll('#usage-table tbody tr')].map(cells),"
        "        [...document.querySelectorAll('#usage-table tfoot tr')].flatMap(cells)];")


def counts(r: dict) -> list[str]:
    return [f"{r[f]:,}" for f in ("requests", "input_tokens", "cached_tokens", "thinking_tokens", "output_tokens",
                                  "tool_calls", "errors")]


def tokens(r: dict) -> int:
    return r["input_tokens"] + r["thinking_tokens"] + r["output_tokens"]


def test_an_admin_sees_every_keys_usage_per_day_and_model(stack):
    driver = chromium()
    try:
        wait = sign_in(driver, stack, ADMIN)
        per_day = usage(stack, ADMIN, "day,model")
        want = {(r["day"], r["model"]): tokens(r) for r in per_day["data"]}
        assert set(want) == {(YESTERDAY, FLASH), (TODAY.isoformat(), FLASH), (TODAY.isoformat(), PRO)}
        wait.until(lambda d: bars(d) == want)
        points = driver.find_elements(By.CSS_SELECTOR, "#usage-chart circle.cost-point")
        assert [p.get_attribute("data-day") for p in points] == [(TODAY - timedelta(days=6 - i)).isoformat()
                                                                 for i in range(7)]
        cost = {r["day"]: 0.0 for r in per_day["data"]}
        for r in per_day["data"]:
            cost[r["day"]] += r["cost_usd"]
        for p in points:
            assert float(p.get_attribute("data-cost")) == pytest.approx(cost.get(p.get_attribute("data-day"), 0))
        assert len(driver.find_element(By.CSS_SELECTOR, "#usage-chart polyline.cost")
                   .get_attribute("points").split()) == 7
        legend = driver.find_element(By.ID, "usage-legend").text
        assert FLASH in legend and PRO in legend
        assert "genai-prices" in driver.find_element(By.ID, "usage-source").text

        doc = usage(stack, ADMIN, "key,model")
        rows, foot = table(driver)
        assert rows == [[r["key"], r["model"], *counts(r), money(r["cost_usd"])] for r in doc["data"]]
        assert {(r[0], r[1]) for r in rows} == {(kid(ADMIN), FLASH), (kid(ADMIN), PRO), (kid(BOB), FLASH)}
        assert foot == ["total", *counts(doc["totals"]), money(doc["totals"]["cost_usd"])]
        assert doc["totals"]["requests"] == 6 and foot[1] == "6"
        shot(driver, "usage-admin")

        Select(driver.find_element(By.NAME, "series")).select_by_value("key")
        by_key = {(r["day"], r["key"]): tokens(r) for r in usage(stack, ADMIN, "day,key")["data"]}
        wait.until(lambda d: bars(d) == by_key)
        assert {s for _, s in by_key} == {kid(ADMIN), kid(BOB)}
        assert ADMIN not in driver.page_source and BOB not in driver.page_source
    finally:
        driver.quit()


def test_a_key_sees_only_its_own_usage(stack):
    driver = chromium()
    try:
        wait = sign_in(driver, stack, BOB)
        Select(driver.find_element(By.NAME, "series")).select_by_value("key")
        mine = usage(stack, BOB, "day,key")
        assert {r["key"] for r in mine["data"]} == {kid(BOB)}
        wait.until(lambda d: bars(d) == {(r["day"], r["key"]): tokens(r) for r in mine["data"]})
        doc = usage(stack, BOB, "key,model")
        wait.until(lambda d: table(d)[0] and table(d)[0][0][0] == kid(BOB))
        rows, foot = table(driver)
        assert rows == [[kid(BOB), FLASH, *counts(doc["data"][0]), money(doc["data"][0]["cost_usd"])]]
        assert foot[:2] == ["total", "2"]
        assert foot == ["total", *counts(doc["totals"]), money(doc["totals"]["cost_usd"])]
        assert kid(ADMIN) not in driver.page_source
        shot(driver, "usage-own-key")
    finally:
        driver.quit()


def money(v: float) -> str:
    from proxy.usage_command import money as cli_money
    return cli_money(v)
