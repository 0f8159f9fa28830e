"""The endpoint's UI in a real headless Chromium: it loads, runs a saved query, shows its rows."""

from __future__ import annotations

import shutil

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import CASES
from tests.support.browser import chromium, resources_loaded, screenshot
from tests.support.endpoint_helpers import serving
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
            # It opens in a tab of its own (the start tab has its example's rows) and runs over every server.
            wait.until(lambda b: b.execute_script("return toolkgYasgui.getTab().getName()") == "server-tools")
            rows = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".tabPanel.active .yasr table tbody tr"))
            table = browser.find_element(By.CSS_SELECTOR, ".tabPanel.active .yasr table").text
            assert len(rows) == 20
            assert "acme_user_login" in table and "set_screen_brightness" in table
            shot = screenshot(browser, "endpoint-ui-saved-query.png")
            assert shot.stat().st_size > 10_000
            # Everything the page loaded came from the endpoint itself: no CDN, no public lookup services.
            assert all(url.startswith(base + "/") for url in resources_loaded(browser)), resources_loaded(browser)
    finally:
        browser.quit()
