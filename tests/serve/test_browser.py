"""The dashboard in a real browser: Playwright drives Debian's headless Chromium
(/usr/bin/chromium, or $MEMBRANE_CHROMIUM; `make test` installs it) against `membrane serve`
on loopback. Screenshots of every page go to test-artifacts/serve/ (git-ignored) and are
checked for a non-empty rendering; `MEMBRANE_DOCS_SCREENSHOTS=1` also refreshes the two
docs/how-to/serve.md shows (docs/serve-timeline.png, docs/serve-report.png)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.ledger import Ledger
from tests.serve.conftest import TOKEN, Served

pytestmark = pytest.mark.java

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "serve"
DOCS = ROOT / "docs"
CHROMIUM = os.environ.get("MEMBRANE_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium per module (Playwright gives it a fresh, temporary profile)."""
    if not Path(CHROMIUM).is_file():
        message = f"{CHROMIUM} is missing: `make test` installs Debian's chromium (scripts/check-chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _shot(page: object, name: str, docs: str | None = None) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 8_000, f"{name}: empty rendering"
    if docs and os.environ.get("MEMBRANE_DOCS_SCREENSHOTS"):
        DOCS.mkdir(exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 1400})  # type: ignore[attr-defined]
        page.screenshot(path=str(DOCS / docs), full_page=False)  # type: ignore[attr-defined]
        page.set_viewport_size({"width": 1280, "height": 860})  # type: ignore[attr-defined]
    return path


def _page(browser: object, **kw: object) -> object:
    ctx = browser.new_context(viewport={"width": 1280, "height": 860}, **kw)  # type: ignore[attr-defined]
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    return page


def test_runs_filter_run_cell_report_learning(browser: object, reviewing: Served) -> None:
    page = _page(browser)
    page.goto(reviewing.url + "/runs")  # type: ignore[attr-defined]
    assert page.title().startswith("Runs")  # type: ignore[attr-defined]
    _shot(page, "runs")
    # keyboard first: the first Tab reaches the skip link
    page.keyboard.press("Tab")  # type: ignore[attr-defined]
    assert page.evaluate("document.activeElement.className") == "skip"  # type: ignore[attr-defined]
    # the next page is appended in place (htmx), newest first, no run twice
    first = page.locator("#runs-table tbody tr:not(#more-row) td:first-child a").all_inner_texts()  # type: ignore[attr-defined]
    assert len(first) == 20
    page.click("#more-row a")  # type: ignore[attr-defined]
    # a locator wait, not wait_for_function: a polled string is eval, which the page's CSP refuses
    page.locator("#runs-table tbody tr:not(#more-row) td:first-child a").nth(20).wait_for()  # type: ignore[attr-defined]
    both = page.locator("#runs-table tbody tr:not(#more-row) td:first-child a").all_inner_texts()  # type: ignore[attr-defined]
    assert both[:20] == first and len(both) == 40 == len(set(both))
    # filter to EXHAUSTED: htmx swaps the table and pushes the URL
    page.select_option("select[name=state]", "EXHAUSTED")  # type: ignore[attr-defined]
    page.click("form.filter button[type=submit]")  # type: ignore[attr-defined]
    page.wait_for_url("**state=EXHAUSTED**")  # type: ignore[attr-defined]
    page.wait_for_selector("caption:has-text('in state EXHAUSTED')")  # type: ignore[attr-defined]
    states = page.locator("#runs-table tbody td:nth-child(2)").all_inner_texts()  # type: ignore[attr-defined]
    assert states and set(states) == {"EXHAUSTED"}
    _shot(page, "runs-exhausted")
    # open a run: an EXHAUSTED one shows its failing verdict
    page.locator("#runs-table tbody a").first.click()  # type: ignore[attr-defined]
    page.wait_for_selector("h2:has-text('Timeline')")  # type: ignore[attr-defined]
    assert page.locator(".verdict .bad").count() >= 1  # type: ignore[attr-defined]
    _shot(page, "run-exhausted")
    # a committed run that took two attempts: its timeline, then a cell's provenance
    page.goto(reviewing.url + "/runs?state=COMMITTED")  # type: ignore[attr-defined]
    row = page.locator("#runs-table tbody tr", has_text="✗✓").first  # type: ignore[attr-defined]
    row.locator("a").first.click()
    page.wait_for_selector("table.diff")  # type: ignore[attr-defined]
    assert "publish_commit" in page.inner_text("ol.timeline")  # type: ignore[attr-defined]
    _shot(page, "run-timeline", docs="serve-timeline.png")
    page.click("dd a[href^='/artifacts/']")  # type: ignore[attr-defined]
    page.locator("table.cells td a").nth(2).click()  # type: ignore[attr-defined]
    page.wait_for_selector("#proposed")  # type: ignore[attr-defined]
    text = page.inner_text("ol.provenance")  # type: ignore[attr-defined]
    assert (
        "Proposed in attempt" in text and "Admitted by value_gate" in text and "Committed" in text
    )
    _shot(page, "cell-provenance")
    # the report: Chart.js draws every chart beside its table
    page.goto(reviewing.url + "/report")  # type: ignore[attr-defined]
    page.wait_for_selector("figure.chart.drawn canvas")  # type: ignore[attr-defined]
    assert page.locator("figure.chart").count() == page.locator("figure.chart.drawn").count() == 4  # type: ignore[attr-defined]
    _shot(page, "report", docs="serve-report.png")
    page.goto(reviewing.url + "/learning")  # type: ignore[attr-defined]
    page.wait_for_selector("figure.chart.drawn")  # type: ignore[attr-defined]
    _shot(page, "learning")
    assert page.errors == []  # type: ignore[attr-defined]


def test_approve_with_the_token_and_refused_without(browser: object, reviewing: Served) -> None:
    ledger_path = reviewing.workspace / ".membrane" / "ledger.sqlite"
    page = _page(browser)
    page.goto(f"{reviewing.url}/?token={TOKEN}")  # type: ignore[attr-defined]
    page.wait_for_url("**/runs")  # the token is kept in a cookie and leaves the URL
    page.goto(reviewing.url + "/review")  # type: ignore[attr-defined]
    _shot(page, "review")
    held = page.locator("table.review tbody tr").first.get_attribute("id").removeprefix("held-")  # type: ignore[attr-defined]
    page.click(f"button:has-text('Approve {held}')")  # type: ignore[attr-defined]
    page.wait_for_selector("p.ok[role=status]")  # type: ignore[attr-defined]
    assert f"{held} approved" in page.inner_text("p.ok")  # type: ignore[attr-defined]
    ledger = Ledger.reader(ledger_path)
    try:
        run = ledger.run(held)
        commit = ledger.commit_of_run(held)
    finally:
        ledger.close()
    assert run is not None and run.status == "COMMITTED" and commit is not None
    assert (reviewing.workspace / "current" / "artifacts" / f"{commit.content_hash}.json").is_file()
    assert commit.artifact_id in (reviewing.workspace / "current" / "corpus.jsonl").read_text()
    # another browser, without the token: the same act is refused and nothing changes
    stranger = _page(browser)
    stranger.goto(reviewing.url + "/review")  # type: ignore[attr-defined]
    assert "has not presented the token" in stranger.inner_text("main")  # type: ignore[attr-defined]
    other = (
        stranger.locator("table.review tbody tr").first.get_attribute("id").removeprefix("held-")
    )  # type: ignore[attr-defined]
    stranger.click(f"button:has-text('Approve {other}')")  # type: ignore[attr-defined]
    stranger.wait_for_selector("h1:has-text('401')")  # type: ignore[attr-defined]
    assert "auth.token_required" in stranger.inner_text("h1")  # type: ignore[attr-defined]
    _shot(stranger, "review-refused")
    ledger = Ledger.reader(ledger_path)
    try:
        assert ledger.run(other).status == "HELD"  # type: ignore[union-attr]
    finally:
        ledger.close()


@pytest.mark.parametrize(
    "path", ["/runs", "/runs?state=EXHAUSTED", "/report", "/review", "/learning", "/api"]
)
def test_pages_load_with_javascript_off(browser: object, readonly: Served, path: str) -> None:
    page = _page(browser, java_script_enabled=False)
    response = page.goto(readonly.url + path)  # type: ignore[attr-defined]
    assert response.status == 200
    assert page.locator("main h1").count() == 1  # type: ignore[attr-defined]
    if path.startswith("/report"):  # no chart drawn, the numbers are in the tables
        assert page.locator("figure.chart.drawn").count() == 0  # type: ignore[attr-defined]
        assert page.locator("table.chart-table").count() == 4  # type: ignore[attr-defined]
    if path == "/runs":  # the filter form is a plain GET form, the next page a plain link
        page.select_option("select[name=state]", "COMMITTED")  # type: ignore[attr-defined]
        page.click("form.filter button[type=submit]")  # type: ignore[attr-defined]
        page.wait_for_url("**state=COMMITTED**")  # type: ignore[attr-defined]
        states = page.locator("#runs-table tbody td:nth-child(2)").all_inner_texts()  # type: ignore[attr-defined]
        assert set(states) == {"COMMITTED"}
    _shot(page, "nojs" + path.replace("/", "-").replace("?", "-").replace("=", "-"))
