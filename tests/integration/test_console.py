"""The web console (`[console]`, `/ui/`) in headless Chromium, against real upstreams.

* mcp-server-time and server-memory are locked with `sluice lock`; then `time` is started with
  another local timezone, which changes the description inside its tools' input schemas: real
  drift, two changed entries. Chromium (Debian's chromium + chromium-driver, driven by selenium)
  reads every page and checks what it shows against /health, the lockfile and the MCP catalog.
* A drift is approved through the UI, one entry then the rest of the upstream: the lockfile then
  holds the new definitions and the Python MCP client sees the approved tools served.
* With `[auth]` (OAuth, tokens from the fake authorization server) a principal without the admin
  scope sees a read-only drift page and its approval POST is refused with 403, even with a valid
  form token; one with the scope approves. Without a valid form token nothing is written.
* Off by default (404); with `listener = "metrics"` it is served on `[metrics] listen` only,
  read-only without `[auth]`, behind the same Host check.

Screenshots go to target/test-artifacts/console/ (docs/console.png is one of them).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness as H
from conftest import SluiceServer, toml_str, write_config
from test_auth import auth_server, free_port, oauth_block, running_sluice, server_block

ARTIFACTS = H.REPO / "target" / "test-artifacts" / "console"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
PAGE_LIMIT = 100 * 1024
PAGES = ("/ui/", "/ui/catalog", "/ui/drift", "/ui/audit", "/ui/metrics")
CONSOLE_OPEN = '\n[console]\nenabled = true\nallow_changes_without_auth = true\n'
# What mcp-server-time's tools say about the local timezone, locked with UTC, served with Paris.
LOCKED_TZ, SERVED_TZ = "UTC", "Europe/Paris"


def time_upstream(tz: str) -> H.Upstream:
    return H.Upstream("time", str(H.TIME_BIN), ("--local-timezone", tz), modern=True)


def memory_upstream(ws: H.Workspace) -> H.Upstream:
    return ws.upstreams()["memory"]


# ------------------------------------------------------------------------------------------------
# HTTP and browser helpers
# ------------------------------------------------------------------------------------------------


def fetch(base: str, path: str, *, data: dict[str, str] | None = None, token: str | None = None,
          origin: str | None = None) -> tuple[int, str, dict[str, str]]:
    headers = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if origin:
        headers["Origin"] = origin
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    if body is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    req = urllib.request.Request(base + path, data=body, headers=headers, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(req, timeout=H.OP_TIMEOUT) as r:  # noqa: S310 - loopback only
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def csrf_of(page: str) -> str | None:
    m = re.search(r'name="csrf" value="([^"]+)"', page)
    return m.group(1) if m else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(H.OP_TIMEOUT)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()


def visit(driver: Any, url: str, shot: str) -> None:
    driver.get(url)
    driver.save_screenshot(str(ARTIFACTS / f"{shot}.png"))


def cells(driver: Any, css: str) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, css)
    return [[c.text for c in r.find_elements(By.CSS_SELECTOR, "th, td")] for r in rows]


def click_through(driver: Any, element: Any, submit: bool = False) -> None:
    """Clicks a link or a form's button (or submits the form an input is in) and waits for the
    page it leads to: until the element is gone with its page, and the new page is loaded
    (reading the old page's elements meanwhile is a race)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def gone(_driver: Any) -> bool:
        # Chromium reports an element of a page being replaced either as stale or, mid-swap, as
        # a node that "does not belong to the document" (CI saw the second): both mean gone.
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e.msg):
                return True
            raise

    if submit:
        element.submit()
    else:
        element.click()
    wait = WebDriverWait(driver, H.OP_TIMEOUT)
    wait.until(gone)
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")


def text_of(driver: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css).text


async def served_tools(url: str) -> dict[str, dict[str, Any]]:
    with anyio.fail_after(H.CONNECT_TIMEOUT + H.OP_TIMEOUT):
        async with H.make_client(url, "legacy") as client:
            listing = await H.drain(client, "tools")
            for name in ("time__get_current_time", "memory__read_graph"):
                if any(t["name"] == name for t in listing.items):
                    await client.call_tool(name, {"timezone": "UTC"} if name.startswith("time") else {})
    return {t["name"]: t for t in listing.items}


def judged(srv: SluiceServer) -> dict[str, Any]:
    """/health's upstreams once every catalog read was judged against the lockfile."""
    deadline = time.monotonic() + H.READY_TIMEOUT
    while True:
        ups = srv.health()["upstreams"]
        if all(u["approval"] != "pending" for u in ups.values()) or time.monotonic() > deadline:
            return ups
        time.sleep(0.1)


def sluice_cli(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(H.SLUICE_BIN), *args, "--config", str(config)], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)


def tz_of(definition: dict[str, Any]) -> str:
    return json.dumps(definition.get("inputSchema", {}))


# ------------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------------


def test_every_page_and_an_approval_through_the_browser(tmp_path: Path, browser: Any, sluice_servers: Any) -> None:
    ws = H.Workspace(tmp_path / "ws")
    cfg = tmp_path / "sluice.toml"
    lockfile = tmp_path / "sluice.lock"
    write_config(cfg, [time_upstream(LOCKED_TZ), memory_upstream(ws)])
    locked = sluice_cli("lock", config=cfg)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    before = json.loads(lockfile.read_text())
    assert LOCKED_TZ in tz_of(before["upstreams"]["time"]["tools"]["get_current_time"]["definition"])
    # The same config, but time now runs in another timezone, and the console is on.
    write_config(cfg, [time_upstream(SERVED_TZ), memory_upstream(ws)])
    cfg.write_text(cfg.read_text() + CONSOLE_OPEN)
    srv: SluiceServer = sluice_servers(["--config", str(cfg)], tmp_path / "sluice.log", {"time", "memory"})
    health = judged(srv)
    assert health["time"]["approval"] == "drifted", health["time"]
    assert health["memory"]["approval"] == "unchanged", health["memory"]

    # Drifted time tools are withheld; memory's are served. One call of each goes to the audit log.
    tools = anyio.run(served_tools, srv.url)
    assert not any(n.startswith("time__") for n in tools), sorted(tools)
    memory_tools = sorted(n for n in tools if n.startswith("memory__"))
    assert len(memory_tools) == health["memory"]["tools"] > 0

    # Every page: HTML under 100 KB, the strict CSP, no script.
    for path in PAGES:
        status, body, headers = fetch(srv.base, path)
        assert status == 200, (path, status, body[:300])
        assert len(body.encode()) < PAGE_LIMIT, (path, len(body))
        csp = headers.get("content-security-policy", "")
        assert "default-src 'self'" in csp and "script-src 'none'" in csp, (path, csp)
        assert "<script" not in body, path

    # Upstreams: names, states, counts as /health has them.
    visit(browser, srv.base + "/ui/", "upstreams")
    rows = {r[0]: r for r in cells(browser, "main table tbody tr")}
    assert set(rows) == {"time", "memory"}, rows
    for name, row in rows.items():
        assert row[1] == "ready", row
        assert row[6] == str(health[name]["tools"]), (row, health[name])
    assert rows["time"][10].startswith("drifted"), rows["time"]
    assert rows["memory"][10] == "unchanged", rows["memory"]

    # Catalog: every entry of both reads; a search; one entry's definition.
    total = sum(health[n][k] for n in ("time", "memory") for k in ("tools", "resources", "resource_templates", "prompts"))
    visit(browser, srv.base + "/ui/catalog", "catalog")
    assert text_of(browser, "#count").startswith(f"{total} entries"), text_of(browser, "#count")
    states = {r[2]: r[3] for r in cells(browser, "main table tbody tr")}
    assert states["time__get_current_time"] == "changed", states
    assert all(states[n] == "approved" for n in memory_tools), states
    from selenium.webdriver.common.by import By

    search = browser.find_element(By.NAME, "q")
    search.send_keys("convert")
    click_through(browser, search, submit=True)
    assert [r[2] for r in cells(browser, "main table tbody tr")] == ["time__convert_time"]
    click_through(browser, browser.find_element(By.LINK_TEXT, "time__convert_time"))
    assert SERVED_TZ in text_of(browser, "main pre")

    # Drift: both time tools, approved beside current, the schema marked as changed.
    visit(browser, srv.base + "/ui/drift", "drift")
    shutil.copy(ARTIFACTS / "drift.png", ARTIFACTS / "console.png")
    assert text_of(browser, "#count") == "2 drifted entries in 1 upstreams."
    changed = cells(browser, "section.entry tr.changed")
    assert changed and all(r[0] == "inputSchema (changed)" for r in changed), changed
    assert any(LOCKED_TZ in r[1] and SERVED_TZ in r[2] for r in changed), changed

    # Approve one entry through its form.
    section = next(s for s in browser.find_elements(By.CSS_SELECTOR, "section.entry")
                   if "get_current_time" in s.find_element(By.CSS_SELECTOR, "h2").text)
    click_through(browser, section.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    assert "Approved into" in text_of(browser, "p.notice[role=status]")
    browser.save_screenshot(str(ARTIFACTS / "drift-approved.png"))
    lock = json.loads(lockfile.read_text())
    assert SERVED_TZ in tz_of(lock["upstreams"]["time"]["tools"]["get_current_time"]["definition"])
    assert LOCKED_TZ in tz_of(lock["upstreams"]["time"]["tools"]["convert_time"]["definition"])
    assert lock["upstreams"]["memory"] == before["upstreams"]["memory"]
    assert text_of(browser, "#count") == "1 drifted entries in 1 upstreams."
    tools = anyio.run(served_tools, srv.url)
    assert "time__get_current_time" in tools and "time__convert_time" not in tools, sorted(tools)
    assert SERVED_TZ in tz_of(tools["time__get_current_time"])

    # Approve the rest of the upstream.
    click_through(browser, browser.find_element(By.XPATH, "//button[text()='Approve all of time']"))
    assert "locked time" in text_of(browser, "p.notice[role=status]")
    assert text_of(browser, "#count") == "0 drifted entries in 0 upstreams."
    lock = json.loads(lockfile.read_text())
    assert SERVED_TZ in tz_of(lock["upstreams"]["time"]["tools"]["convert_time"]["definition"])
    tools = anyio.run(served_tools, srv.url)
    assert {"time__get_current_time", "time__convert_time"} <= set(tools), sorted(tools)
    check = sluice_cli("check", config=cfg)
    assert check.returncode == 0, check.stdout + check.stderr

    # Audit: the calls made above, filtered by upstream, as `sluice audit` reads them.
    visit(browser, srv.base + "/ui/audit?upstream=time", "audit")
    audit_rows = cells(browser, "main table tbody tr")
    assert audit_rows and all(r[4] == "time" for r in audit_rows), audit_rows
    assert any(r[3] == "tools/call" and r[6] == "ok" for r in audit_rows), audit_rows

    # Metrics: the calls of the last minute, per upstream.
    visit(browser, srv.base + "/ui/metrics", "metrics")
    minute = {r[0]: r for r in cells(browser, "main table:first-of-type tbody tr")}
    assert "time" in minute and "memory" in minute, minute
    assert int(minute["time"][1]) >= 2 and int(minute["memory"][1]) >= 1, minute

    # Readable on a phone.
    browser.set_window_size(390, 844)
    visit(browser, srv.base + "/ui/", "upstreams-phone")
    browser.set_window_size(1280, 900)


def test_the_pages_against_the_example_config(tmp_path: Path, browser: Any) -> None:
    # As scripts/run-example.sh runs it, from the repository root (the example's paths are
    # relative to it), on a free port instead of 8787.
    for folder in ("example-files", "example-memory"):
        (H.REPO / ".sluice" / folder).mkdir(parents=True, exist_ok=True)
    names = {"everything", "time", "memory", "files"}
    srv = SluiceServer(["serve", "--config", "examples/sluice.toml", "--listen", "127.0.0.1:0"],
                       tmp_path / "sluice.log", env={"PWD": str(H.REPO)}, cwd=H.REPO)
    try:
        srv.start()
        srv.wait_healthy(names)
        health = judged(srv)
        assert set(health) == names and all(u["state"] == "ready" for u in health.values()), health
        visit(browser, srv.base + "/ui/", "example-upstreams")
        rows = {r[0]: r for r in cells(browser, "main table tbody tr")}
        assert set(rows) == names, rows
        assert all(rows[n][6] == str(health[n]["tools"]) for n in names), (rows, health)
        total = sum(u[k] for u in health.values() for k in ("tools", "resources", "resource_templates", "prompts"))
        visit(browser, srv.base + "/ui/catalog", "example-catalog")
        assert text_of(browser, "#count").startswith(f"{total} entries"), text_of(browser, "#count")
        listed = cells(browser, "main table tbody tr")
        assert {r[0] for r in listed} == names
        assert all(r[3] == "unpinned" for r in listed), listed[:3]
        # server-everything's URL defaults are poisoning-scan findings: the catalog shows them.
        assert any(r[0] == "everything" and r[4] for r in listed), [r for r in listed if r[0] == "everything"][:5]
        visit(browser, srv.base + "/ui/drift", "example-drift")
        assert "No lockfile" in text_of(browser, "main")
        assert "Read-only" in text_of(browser, "main")
        for path in ("/ui/audit", "/ui/metrics"):
            visit(browser, srv.base + path, "example-" + path.rsplit("/", 1)[1])
            assert "sluice" in browser.title
        for path in PAGES:
            status, body, _ = fetch(srv.base, path)
            assert status == 200 and len(body.encode()) < PAGE_LIMIT, (path, status, len(body))
    finally:
        srv.stop()


def test_approval_needs_the_admin_scope_and_a_form_token(tmp_path: Path) -> None:
    with auth_server() as a:
        def config(port: int) -> str:
            listen = f"127.0.0.1:{port}"
            return (server_block(listen) + oauth_block(f"http://{listen}/mcp", a.issuer)
                    + f'\n[[upstream]]\nname = "time"\ncommand = {toml_str(str(H.TIME_BIN))}\nargs = []\n'
                    + '\n[console]\nenabled = true\nadmin_scope = "sluice:admin"\n')

        def token(port: int, scope: str = "mcp:tools") -> str:
            return a.valid_rs256(f"http://127.0.0.1:{port}/mcp", scope=scope)

        with running_sluice(tmp_path, config, {"time"}, token=token) as gw:
            base, port = f"http://127.0.0.1:{gw.port}", gw.port
            lockfile = tmp_path / "sluice.lock"
            reader, admin = token(port), token(port, "mcp:tools sluice:admin")
            # No credential: the console is behind [auth] like /mcp.
            status, _, headers = fetch(base, "/ui/")
            assert status == 401 and "www-authenticate" in {k.lower() for k in headers}, (status, headers)
            # A reader sees the pages, read-only: no form, so no token.
            status, page, _ = fetch(base, "/ui/drift", token=reader)
            assert status == 200 and "Read-only" in page and csrf_of(page) is None, page[:500]
            status, page, _ = fetch(base, "/ui/", token=reader)
            assert status == 200 and ">time<" in page
            # The admin's page has forms and a token.
            status, page, _ = fetch(base, "/ui/drift", token=admin)
            form_token = csrf_of(page)
            assert status == 200 and form_token, page[:500]
            approve_all = {"target": "all", "csrf": form_token}
            # The reader, even with the admin's token, is refused server-side.
            status, page, _ = fetch(base, "/ui/drift/approve", data=approve_all, token=reader, origin=base)
            assert status == 403 and "sluice:admin" in page, (status, page[:500])
            # The admin without a (valid) token is refused too.
            for bad in ({"target": "all"}, {"target": "all", "csrf": form_token[:-2] + "xx"}):
                status, page, _ = fetch(base, "/ui/drift/approve", data=bad, token=admin, origin=base)
                assert status == 403 and "token" in page, (status, page[:500])
            # From another origin, refused before anything else.
            status, _, _ = fetch(base, "/ui/drift/approve", data=approve_all, token=admin,
                                 origin="http://evil.example")
            assert status == 403
            assert not lockfile.exists(), "a refused approval wrote the lockfile"
            # The admin, with its token, from the console's origin: approved and written.
            status, page, _ = fetch(base, "/ui/drift/approve", data=approve_all, token=admin, origin=base)
            assert status == 200 and "Approved into" in page, (status, page[:800])
            lock = json.loads(lockfile.read_text())
            assert sorted(lock["upstreams"]["time"]["tools"]) == ["convert_time", "get_current_time"]
            health = json.loads(fetch(base, "/health", token=admin)[1])
            assert health["upstreams"]["time"]["approval"] == "unchanged", health


def test_the_console_is_off_by_default_and_can_move_to_the_metrics_listener(tmp_path: Path) -> None:
    time_toml = f'\n[[upstream]]\nname = "time"\ncommand = {toml_str(str(H.TIME_BIN))}\nargs = []\n'
    for d in ("off", "moved"):
        (tmp_path / d).mkdir()
    with running_sluice(tmp_path / "off", lambda port: server_block() + time_toml, {"time"}) as gw:
        assert fetch(f"http://127.0.0.1:{gw.port}", "/ui/")[0] == 404
    metrics_port = free_port()
    moved = (f'\n[metrics]\nlisten = "127.0.0.1:{metrics_port}"\n'
             '\n[console]\nenabled = true\nlistener = "metrics"\n')
    with running_sluice(tmp_path / "moved", lambda port: server_block() + time_toml + moved, {"time"}) as gw:
        assert fetch(f"http://127.0.0.1:{gw.port}", "/ui/")[0] == 404
        base = f"http://127.0.0.1:{metrics_port}"
        status, page, headers = fetch(base, "/ui/")
        assert status == 200 and ">time<" in page, (status, page[:300])
        assert "script-src 'none'" in headers.get("content-security-policy", "")
        # Without [auth] it is read-only there too, and /metrics is still served beside it.
        status, page, _ = fetch(base, "/ui/drift")
        assert status == 200 and "Read-only" in page and csrf_of(page) is None
        assert fetch(base, "/metrics")[0] == 200
        # A rebinding page (a Host that is not local) is refused as on /mcp.
        req = urllib.request.Request(base + "/ui/", headers={"Host": f"evil.example:{metrics_port}"})
        try:
            status = urllib.request.urlopen(req, timeout=H.OP_TIMEOUT).status  # noqa: S310 - loopback only
        except urllib.error.HTTPError as e:
            status = e.code
        assert status == 403
