"""The chat in a real headless Chromium, driven by playwright against `paperchat ui`.

Screenshots of each step go to tests/artifacts/browser/ (look at them after a change to the UI).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from conftest import BROWSER_ARTIFACTS as ARTIFACTS
from load_ui import CHROMIUM, FLAGS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.goto(server.url)
        page.get_by_test_id("stChatInputTextArea").wait_for(timeout=90_000)
        yield page
        browser.close()


def test_ask_read_open_a_card_and_export(page):
    page.get_by_text("try one of these").wait_for(timeout=60_000)
    page.screenshot(path=ARTIFACTS / "1-first-open.png", full_page=True)

    asked = time.monotonic()
    page.get_by_test_id("stChatInputTextArea").fill("Which papers make attention cheaper, and how?")
    page.keyboard.press("Enter")
    answer = page.get_by_test_id("stChatMessage").nth(1)
    answer.get_by_text("[1]").first.wait_for(timeout=120_000)
    first_text = time.monotonic() - asked
    card = page.get_by_test_id("stExpander").first
    card.wait_for(timeout=120_000)
    complete = time.monotonic() - asked
    page.screenshot(path=ARTIFACTS / "2-answer.png", full_page=True)
    assert "MoH" in answer.inner_text()
    # The first source card, by its label (after the expander's icon).
    assert card.inner_text().strip().endswith("[1] MoH: Multi-Head Attention as Mixture-of-Head Attention")

    card.click()
    page.wait_for_timeout(500)
    page.screenshot(path=ARTIFACTS / "3-card-open.png", full_page=True)
    opened = card.inner_text()
    assert "Peng Jin" in opened and "Abstract" in opened

    with page.expect_download() as download:
        page.get_by_text("Conversation (Markdown)").click()
    exported = Path(download.value.path()).read_text(encoding="utf-8")
    page.screenshot(path=ARTIFACTS / "4-exported.png", full_page=True)
    assert "## Q: Which papers make attention cheaper" in exported
    assert "[1]" in exported and "Mixture-of-Head" in exported
    (ARTIFACTS / "timings.txt").write_text(f"first text {first_text:.1f} s\ncomplete {complete:.1f} s\n")


def _ask(page, question: str, turn: int):
    asked = time.monotonic()
    page.get_by_test_id("stChatInputTextArea").fill(question)
    page.keyboard.press("Enter")
    answer = page.get_by_test_id("stChatMessage").nth(2 * turn + 1)
    answer.wait_for(timeout=120_000)
    return answer, asked


def test_a_collection_answer_and_a_decline(page):
    answer, asked = _ask(page, "Which papers are about bandits?", 1)
    answer.get_by_text("2 papers match").wait_for(timeout=120_000)
    first_text = time.monotonic() - asked
    page.wait_for_timeout(800)
    answer.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "6-collection.png", full_page=True)
    shown = answer.inner_text()
    assert "Multi-armed Bandits with Interference" in shown and "[2]" in shown

    answer, _ = _ask(page, "Which paper speeds up sampling of diffusion models with fewer denoising steps?", 2)
    answer.get_by_text("The indexed papers do not answer this").wait_for(timeout=120_000)
    page.wait_for_timeout(800)
    closest = answer.get_by_text("Closest papers").first
    closest.click()
    page.wait_for_timeout(600)
    answer.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "7-decline.png", full_page=True)
    shown = answer.inner_text()
    assert "[1]" not in shown.split("Closest papers")[0], "a decline cites nothing"
    assert "they do not answer this" in shown
    with (ARTIFACTS / "timings.txt").open("a") as timings:
        timings.write(f"collection first text {first_text:.1f} s\n")
