"""The memory inspector in a real headless Chromium, driven by Selenium.

The same scenario runs against the page mounted in a real `langgraph dev` (`http.app`, the
server's token file) and against `memory-agent inspect --tokens FILE` (standalone, the MCP
token file): refusal without a token and with a wrong one, alice's list by kind and status,
ranked search with reasons, provenance, a correction that supersedes with history, forget,
hard delete and export, and never a word of bob's. Screenshots go to the test's tmp dir.

Needs Debian's `chromium` and `chromium-driver` (`apt-get install -y chromium chromium-driver`);
Selenium is given the system chromedriver, so it never downloads a driver or a browser.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from conftest import ServerProcess, Servers

pytestmark = pytest.mark.integration

GRAPH = "memory_agent"
TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdefgh"}
INSTALL = (
    "install the browser with `apt-get install -y chromium chromium-driver` (Debian; as root) "
    "and Selenium with `pip install -e '.[dev]'`"
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
)
WAIT = 20.0
MARKUP = "User's motto: <b>carpe</b> <img src=x onerror=alert(1)> diem."
"""A memory that looks like markup: the page must show it as text, never run it."""


def _find(names: tuple[str, ...]) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def chromium() -> tuple[str, str]:
    """Paths of the system's chromium and chromedriver (skip, saying how to install them)."""
    pytest.importorskip("selenium", reason=f"Selenium is not installed: {INSTALL}")
    browser = _find(("chromium", "chromium-browser"))
    driver = _find(("chromedriver",))
    if browser is None or driver is None:
        pytest.skip(f"no chromium or chromedriver on PATH: {INSTALL}")
    return browser, driver


@pytest.fixture
def browser(chromium: tuple[str, str], tmp_path: Path) -> Iterator[Any]:
    """A fresh headless Chromium (new profile, downloads into `tmp_path/downloads`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium[0]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    # An explicit driver path: Selenium Manager (which would download one) never runs.
    driver = webdriver.Chrome(service=Service(executable_path=chromium[1]), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


def write_tokens(path: Path) -> Path:
    path.write_text(json.dumps({tok: {"user": user} for user, tok in TOKENS.items()}))
    return path


# --- the page, as a person uses it --------------------------------------------------------


class Page:
    """The inspector page in the browser, with the steps a person takes."""

    def __init__(self, driver: Any, url: str, shots: Path) -> None:
        self.driver = driver
        self.url = url
        self.shots = shots

    def wait(self, predicate: Any, what: str) -> Any:
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        # The list is re-rendered when data arrives: an element read mid-render is retried.
        wait = WebDriverWait(self.driver, WAIT, ignored_exceptions=[StaleElementReferenceException])
        return wait.until(lambda d: predicate(), message=what)

    def by_id(self, element_id: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.ID, element_id)

    def css(self, selector: str, root: Any = None) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list((root or self.driver).find_elements(By.CSS_SELECTOR, selector))

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def message(self) -> str:
        box = self.by_id("message")
        return str(box.text) if box.is_displayed() else ""

    def sign_in(self, token: str) -> None:
        field = self.by_id("token")
        field.clear()
        field.send_keys(token)
        self.by_id("token-save").click()

    def listed(self) -> list[str]:
        """The contents of the memories listed (under the current filters)."""
        return [e.text for e in self.css("#list .memory .content")]

    def item(self, text: str, where: str = "#list") -> Any:
        for e in self.css(f"{where} .memory"):
            if text in self.css(".content", e)[0].text:
                return e
        raise AssertionError(f"no memory with {text!r} in {where}: {self.listed()}")

    def filter(self, kind: str = "", status: str = "") -> None:
        from selenium.webdriver.support.ui import Select

        Select(self.by_id("kind")).select_by_value(kind)
        Select(self.by_id("status")).select_by_value(status)

    def search(self, query: str) -> list[tuple[str, str]]:
        field = self.by_id("query")
        field.clear()
        field.send_keys(query)
        self.by_id("search").click()
        self.wait(lambda: self.by_id("results-section").is_displayed(), "search results")
        self.wait(lambda: self.by_id("results-query").text == query, "results of this query")
        return [
            (self.css(".content", e)[0].text, self.css(".reason", e)[0].text)
            for e in self.css("#results .memory")
        ]


def run_scenario(page: Page, api: str, downloads: Path, *, thread_of_berlin: str) -> None:
    """Everything a person does in the inspector, checked in the page and through the API."""
    driver = page.driver

    # Refusal: no token, then a wrong one; the page asks to sign in and shows nothing.
    driver.get(page.url)
    page.wait(lambda: page.by_id("token-form").is_displayed(), "the sign-in form")
    assert "bearer token" in page.message() and not page.by_id("app").is_displayed()
    page.sign_in("wrong-token-0123456789abcdef")
    page.wait(lambda: "unknown bearer token" in page.message(), "the wrong token refused")
    page.shot("refused")
    assert "Madrid" not in driver.page_source and "Berlin" not in driver.page_source

    # Bob signs in and sees only his; then alice.
    page.sign_in(TOKENS["bob"])
    page.wait(lambda: page.by_id("app").is_displayed() and page.listed(), "bob's memories")
    assert any("Madrid" in t for t in page.listed()) and "Berlin" not in driver.page_source
    page.by_id("token-clear").click()
    page.wait(lambda: page.by_id("token-form").is_displayed(), "signed out")
    page.sign_in(TOKENS["alice"])
    page.wait(lambda: "memories of alice" in page.by_id("whoami").text, "alice signed in")
    page.wait(lambda: len(page.listed()) >= 2, "alice's memories")

    # List by kind and status.
    listed = page.listed()
    assert any("Berlin" in t for t in listed) and any("green tea" in t for t in listed), listed
    assert "Madrid" not in driver.page_source
    groups = [g.get_attribute("data-kind") for g in page.css("#list .kind-group")]
    assert "fact" in groups and "preference" in groups, groups
    page.shot("list")
    page.filter(kind="preference", status="active")
    assert page.listed() and all("tea" in t for t in page.listed()), page.listed()
    page.filter(kind="", status="active")

    # Ranked search, each hit with the reason it came back.
    hits = page.search("where do I live")
    assert hits and "Berlin" in hits[0][0], hits
    assert "ranked for the query, score" in hits[0][1], hits
    assert not any("Madrid" in h for h, _ in hits)
    page.shot("search")

    # Provenance.
    page.css(".show", page.item("Berlin"))[0].click()
    page.wait(lambda: page.by_id("detail").is_displayed(), "the detail panel")
    thread = page.css('#detail-fields dd[data-field="thread"]')[0].text
    assert thread == thread_of_berlin, thread
    page.by_id("detail-close").click()

    # A correction supersedes the old text, which stays in history.
    berlin = page.item("Berlin")
    page.css(".edit", berlin)[0].click()
    area = page.css("textarea.edit-content", berlin)[0]
    area.clear()
    area.send_keys("User lives in Munich.")
    page.css(".save-edit", berlin)[0].click()
    page.wait(lambda: any("Munich" in t for t in page.listed()), "the correction listed")
    assert not any("Berlin" in t for t in page.listed()), page.listed()
    page.filter(status="superseded")
    page.wait(lambda: any("Berlin" in t for t in page.listed()), "the old text superseded")
    page.filter(status="active")
    page.css(".show", page.item("Munich"))[0].click()
    page.wait(lambda: "Berlin" in page.by_id("detail-chain").text, "the supersede trail")
    page.shot("corrected")
    page.by_id("detail-close").click()

    # Forget (soft): gone from the active list, kept as forgotten.
    page.css(".forget", page.item("green tea"))[0].click()
    page.wait(lambda: not any("green tea" in t for t in page.listed()), "tea forgotten")
    page.filter(status="forgotten")
    page.wait(lambda: any("green tea" in t for t in page.listed()), "tea listed as forgotten")

    # Hard delete (after a confirmation): gone under every status.
    page.filter(status="active")
    munich_id = page.item("Munich").get_attribute("data-id")
    page.css(".delete", page.item("Munich"))[0].click()
    page.wait(lambda: driver.switch_to.alert, "the confirmation").accept()
    page.filter(status="")
    page.wait(lambda: not any("Munich" in t for t in page.listed()), "Munich deleted")
    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
    assert httpx.get(f"{api}/memories/{munich_id}", headers=headers, timeout=30).status_code == 404

    # Export: a JSON-lines file of alice's memories only, with what just happened in it.
    page.by_id("export").click()
    target = downloads / "memories-alice.jsonl"
    page.wait(target.exists, "the export file")
    page.wait(lambda: not list(downloads.glob("*.crdownload")), "the download to finish")
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert rows and {r["user_id"] for r in rows} == {"alice"}
    status = {r["content"]: r["status"] for r in rows}
    assert status.get("User lives in Berlin.") == "superseded" or any(
        "Berlin" in c and s == "superseded" for c, s in status.items()
    ), status
    assert any("green tea" in c and s == "forgotten" for c, s in status.items()), status
    assert not any("Munich" in c for c in status), status
    assert not any("Madrid" in c for c in status), status
    # The same set as the API's export, which the page only saved.
    again = httpx.get(f"{api}/export", headers=headers, timeout=30).text.splitlines()
    assert sorted(json.loads(line)["id"] for line in again) == sorted(r["id"] for r in rows)


# --- through the LangGraph server -----------------------------------------------------------


@pytest.fixture(scope="module")
def dev_server(servers: Servers) -> Iterator[tuple[str, ServerProcess]]:
    tokens = write_tokens(servers.tmp / "tokens.json")
    yield servers.langgraph_dev(
        "langgraph-inspector", GRAPH, keys=("auth", "http"), MEMORY_AGENT_TOKENS=str(tokens)
    )


async def _seed_through_the_server(url: str) -> str:
    """Alice and bob each say things in runs; return the thread of alice's Berlin."""
    from langgraph_sdk import get_client

    berlin = ""
    for user, lines in (
        ("alice", ["I live in Berlin.", "I like green tea."]),
        ("bob", ["I live in Madrid."]),
    ):
        lg = get_client(url=url, headers={"Authorization": f"Bearer {TOKENS[user]}"})
        try:
            for line in lines:
                tid = (await lg.threads.create())["thread_id"]
                msg = {"messages": [{"role": "user", "content": line}]}
                await lg.runs.wait(tid, GRAPH, input=msg)
                berlin = berlin or str(tid)
        finally:
            await lg.aclose()
    return berlin


async def test_the_inspector_in_the_langgraph_server(
    dev_server: tuple[str, ServerProcess], browser: Any, tmp_path: Path
) -> None:
    url = dev_server[0]
    berlin_thread = await _seed_through_the_server(url)
    page = Page(browser, f"{url}/inspector/", tmp_path)
    run_scenario(
        page, f"{url}/inspector/api", tmp_path / "downloads", thread_of_berlin=berlin_thread
    )
    print(f"screenshots in {tmp_path}")


# --- standalone -----------------------------------------------------------------------------


def _seed_home(home: Path) -> None:
    """Alice's and bob's memories written by the service itself, with provenance."""
    from graphs.settings import Settings
    from memory import open_service
    from memory.backends import BackendConfig, open_backends
    from memory.store.records import Source

    settings = Settings.from_env()
    said = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    with open_backends(BackendConfig(home=str(home))) as b:
        service = open_service(settings, b.store, b.index)
        source = Source(thread_id="thread-berlin", message_ids=["msg-1"], said_at=said)
        service.add("alice", "User lives in Berlin.", subject="home.city", source=source)
        service.add("alice", "User likes green tea.", kind="preference", subject="drink.tea")
        service.add("bob", "User lives in Madrid.", subject="home.city")
        service.add("alice", MARKUP, subject="motto")


@pytest.fixture(scope="module")
def seeded(servers: Servers) -> Path:
    """A memory home with alice's and bob's memories (copy it: tests change it)."""
    home = servers.tmp / "seeded-home"
    _seed_home(home)
    return home


def _inspect(servers: Servers, home: Path, *flags: str) -> tuple[str, ServerProcess]:
    """Start `memory-agent inspect` over a copy of `home`; return its base URL and process."""
    copy = servers.tmp / f"home-{len(servers.started)}"
    shutil.copytree(home, copy)
    port = servers.free_port()
    env = servers.env(MEMORY_AGENT_HOME=str(copy), MEMORY_AGENT_MODEL="offline")
    env.pop("CHROMA_PATH", None)
    argv = [str(servers.bin("memory-agent")), "inspect", *flags, "--port", str(port)]
    server = servers.start(argv, ready_url=f"http://127.0.0.1:{port}/inspector/", env=env)
    return f"http://127.0.0.1:{port}", server


def test_the_inspector_standalone(
    servers: Servers, seeded: Path, browser: Any, tmp_path: Path
) -> None:
    tokens = write_tokens(servers.tmp / "standalone-tokens.json")
    url, server = _inspect(servers, seeded, "--tokens", str(tokens))
    page = Page(browser, f"{url}/", tmp_path)  # `/` redirects to the page
    try:
        run_scenario(
            page, f"{url}/inspector/api", tmp_path / "downloads", thread_of_berlin="thread-berlin"
        )
        # What looks like markup is shown as text: no element made, no script run.
        browser.refresh()  # still signed in: the token is kept for the tab's session
        page.wait(lambda: any("carpe" in t for t in page.listed()), "the motto listed")
        assert MARKUP in page.listed()
        assert not page.css("#list b, #list img")
    finally:
        server.stop()
    print(f"screenshots in {tmp_path}")


def test_one_user_standalone_serves_that_user_only(servers: Servers, seeded: Path) -> None:
    url, server = _inspect(servers, seeded, "--user", "alice", "--read-only")
    base = f"{url}/inspector"
    try:
        assert httpx.get(f"{base}/api/me", timeout=30).json()["user"] == "alice"
        mine = httpx.get(f"{base}/api/memories", timeout=30).json()["memories"]
        assert {m["user_id"] for m in mine} == {"alice"} and len(mine) == 3
        bobs = httpx.get(f"{base}/api/search?q=Madrid", timeout=30).json()["results"]
        assert not any("Madrid" in h["memory"]["content"] for h in bobs)
        refused = httpx.post(f"{base}/api/memories/{mine[0]['id']}/forget", json={}, timeout=30)
        assert refused.status_code == 403 and "read-only" in refused.json()["error"]
    finally:
        server.stop()
