"""The endpoint's UI in a real headless Chromium: it loads, runs a saved query, shows its rows."""

from __future__ import annotations

import shutil
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser import chromium, resources_loaded, screenshot
from tests.conftest import CASES
from tests.endpoint_helpers import serving
from toolkg.store.saved_queries import saved_queries


def test_ui_runs_a_saved_query_and_shows_its_rows(cli, tmp_path):
    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(CASES / "inference" / "shop.json", folder / "shop.json")
    store = tmp_path / "store"
    assert cli("build", str(folder), "--store", str(store), "--no-links").returncode == 0
    browser = chromium()
    try:
        with serving(store) as base:
            browser.get(base + "/")
            wait = WebDriverWait(browser, 30)
            buttons = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#saved button[data-query]"))
            assert {b.get_attribute("data-query") for b in buttons} == set(saved_queries())
            assert "snapshot" in browser.find_element(By.ID, "status").text

            browser.find_element(By.CSS_SELECTOR, "button[data-query='server-tools']").click()
            rows = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".yasr table tbody tr"))
            table = browser.find_element(By.CSS_SELECTOR, ".yasr table").text
            assert len(rows) == 20
            assert "acme_user_login" in table and "set_screen_brightness" in table
            shot = screenshot(browser, "endpoint-ui-saved-query.png")
            assert shot.stat().st_size > 10_000
            # Everything the page loaded came from the endpoint itself: no CDN, no public lookup services.
            assert all(url.startswith(base + "/") for url in resources_loaded(browser)), resources_loaded(browser)
    finally:
        browser.quit()


def test_report_page_in_the_browser(cli, tmp_path):
    """`toolkg report` writes one self-contained page: counts, changes, quarantine, SHACL, graph pictures."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    shutil.copy(CASES / "inference" / "shop.json", folder / "shop.json")
    (folder / "broken.json").write_text("{ not json")
    store = tmp_path / "store"
    assert cli("build", str(folder), "--store", str(store), "--no-links").returncode == 3  # quarantined input
    made = cli("report", "--store", str(store))
    assert made.returncode == 0, made.stderr
    page = Path(made.stdout.split()[1])
    assert page.parent.parent == store / "runs" and page.name == "report.html"
    html = page.read_text()
    assert "src=" not in html and "href=" not in html  # nothing to fetch: the page is the whole report

    browser = chromium()
    try:
        browser.get(page.as_uri())
        assert browser.title.startswith("toolkg run ")
        cards = {
            c.text.split("\n")[1]: int(c.text.split("\n")[0]) for c in browser.find_elements(By.CSS_SELECTOR, ".card")
        }
        assert cards["tools"] == 20 and cards["servers"] == 1
        quarantine = browser.find_element(By.ID, "quarantine").find_element(By.XPATH, "following-sibling::table").text
        assert "broken.json" in quarantine and "parse" in quarantine
        assert "conform" in browser.find_element(By.ID, "shacl").find_element(By.XPATH, "following-sibling::p").text
        figure = browser.find_element(By.CSS_SELECTOR, "figure#server-shop")
        boxes = figure.find_elements(By.CSS_SELECTOR, "svg rect")
        arrows = figure.find_elements(By.CSS_SELECTOR, "svg line")
        assert len(boxes) >= 5 and len(arrows) >= 5 and figure.size["height"] > 100  # drawn, not just present
        assert "acme_user_login" in figure.text
        assert resources_loaded(browser) == []
        screenshot(browser, "build-report.png")
    finally:
        browser.quit()
