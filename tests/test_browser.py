"""The app in a real headless Chromium, driven by playwright against `paperchat ui`.

Screenshots of each step go to tests/artifacts/browser/ (look at them after a change to the UI),
and the timings a reader waits for to tests/artifacts/browser/timings.txt.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
from conftest import BROWSER_ARTIFACTS as ARTIFACTS
from load_ui import CHROMIUM, FLAGS

pytestmark = pytest.mark.slow

ATTENTION = "Which papers make attention cheaper, and how?"
# Taller than a screen: a full-page screenshot holds only what Streamlit's main pane shows.
DESKTOP = {"width": 1400, "height": 1800}
PHONE = {"width": 390, "height": 844}
NO_OVERFLOW = "() => document.documentElement.scrollWidth <= window.innerWidth"


def timing(name: str, seconds: float) -> None:
    with (ARTIFACTS / "timings.txt").open("a") as out:
        out.write(f"{name}: {seconds:.1f} s\n")


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def page(browser, server):
    """The first page the server ever serves: its load is the cold first load."""
    page = browser.new_page(viewport=DESKTOP, accept_downloads=True)
    started = time.monotonic()
    page.goto(server.url)
    page.get_by_test_id("stChatInputTextArea").wait_for(timeout=90_000)
    timing("cold first load to a usable chat box", time.monotonic() - started)
    page.get_by_text("Try one of these").wait_for(timeout=90_000)
    timing("cold first load to the examples", time.monotonic() - started)
    yield page
    page.close()


def ask(page, question: str, turn: int):
    """Ask; returns the answer's chat message once it is complete with its evidence, and the
    seconds to its first text and to that."""
    asked = time.monotonic()
    page.get_by_test_id("stChatInputTextArea").fill(question)
    page.keyboard.press("Enter")
    answer = page.get_by_test_id("stChatMessage").nth(2 * turn + 1)
    answer.get_by_test_id("stMarkdown").first.wait_for(timeout=120_000)
    first_text = time.monotonic() - asked
    answer.get_by_test_id("stExpander").first.wait_for(timeout=120_000)
    idle(page)
    return answer, first_text, time.monotonic() - asked


def idle(page) -> None:
    page.wait_for_function("() => document.querySelector('[data-testid=\"stApp\"]').dataset.testScriptState === 'notRunning'")


def test_first_screen_explains_itself(page):
    idle(page)
    page.screenshot(path=ARTIFACTS / "1-first-open.png", full_page=True)
    main = page.get_by_test_id("stMainBlockContainer").inner_text()
    assert "PaperChat" in main and "Ask about 20 ICML 2025 papers." in main, main
    assert "How does MoH work?" in main
    assert "Deploy" not in page.inner_text("body"), "no Deploy button"


def test_a_citation_shows_its_sentence_and_leads_to_its_evidence(page):
    answer, first_text, complete = ask(page, ATTENTION, 0)
    timing("question to first text", first_text)
    timing("question to complete answer with evidence panel", complete)
    page.screenshot(path=ARTIFACTS / "2-answer-with-evidence.png", full_page=True)

    link = answer.get_by_role("link", name="[1]").first
    tip = link.get_attribute("title")
    assert tip.startswith("MoH: Multi-Head Attention as Mixture-of-Head Attention — “"), tip
    link.hover()
    # The card beside the answer holds the same sentence, highlighted in the abstract.
    card = answer.get_by_test_id("stExpander").first
    assert card.inner_text().strip().splitlines()[-1] != "", "the card is open"
    sentence = tip.split("“", 1)[1].rstrip("”")
    assert sentence[:40] in card.inner_text()
    link.click()
    page.wait_for_timeout(500)
    assert page.evaluate("() => location.hash") == "#evidence-0-1"
    assert card.is_visible()
    page.screenshot(path=ARTIFACTS / "3-citation-clicked.png")

    assert "20 ICML 2025 papers" in answer.inner_text() and "extractive" in answer.inner_text(), "the turn's scope"
    with page.expect_download() as download:
        page.get_by_text("Conversation (Markdown)").click()
    exported = Path(download.value.path()).read_text(encoding="utf-8")
    assert "## Q: Which papers make attention cheaper" in exported and "Mixture-of-Head" in exported
    assert re.search(r"\*Exported \d{4}-\d\d-\d\d", exported) and "corpus: 20 ICML 2025 papers" in exported


def test_a_filter_shows_as_a_chip_on_its_turn(page):
    category = page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").first
    category.click()
    page.get_by_role("option", name=re.compile(r"^Theory · Online Learning and Bandits")).click()
    # The choice reaches the server with the rerun it starts; asking before that would ask unfiltered.
    page.wait_for_timeout(500)
    idle(page)
    answer, _, _ = ask(page, "Which papers are about exploration?", 1)
    page.screenshot(path=ARTIFACTS / "4-filter-chip.png", full_page=True)
    assert "category Theory · Online Learning and Bandits" in answer.inner_text()
    # The first turn, asked without it, shows no such chip.
    assert "category Theory" not in page.get_by_test_id("stChatMessage").nth(1).inner_text()


def test_the_conversation_survives_a_reload_and_fits_a_phone(page, browser):
    url = page.url
    assert "c=" in url, "the open conversation is in the address"
    page.reload()
    page.get_by_test_id("stChatMessage").nth(3).wait_for(timeout=60_000)
    assert ATTENTION in page.get_by_test_id("stChatMessage").nth(0).inner_text()
    page.screenshot(path=ARTIFACTS / "5-after-reload.png", full_page=True)

    phone = browser.new_page(viewport=PHONE)
    phone.goto(url)
    phone.get_by_test_id("stChatMessage").nth(3).wait_for(timeout=60_000)
    phone.wait_for_timeout(1000)
    phone.screenshot(path=ARTIFACTS / "6-phone.png", full_page=True)
    assert phone.evaluate(NO_OVERFLOW), "nothing is wider than a phone's screen"
    phone.close()


def test_the_library_searches_and_opens_a_paper(page):
    page.get_by_role("link", name="Library").click()
    query = page.locator(".st-key-library-query input")
    query.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    query.fill("mixture of attention heads")
    query.press("Enter")
    first = page.locator(".st-key-library-hit-1")
    first.wait_for(timeout=60_000)
    page.wait_for_timeout(800)
    page.screenshot(path=ARTIFACTS / "7-library-search.png", full_page=True)
    assert "MoH: Multi-Head Attention as Mixture-of-Head Attention" in first.inner_text()
    page.locator(".st-key-library-open-1 button").click()
    opened = page.locator(".st-key-library-paper")
    opened.wait_for(timeout=60_000)
    page.wait_for_timeout(800)
    page.screenshot(path=ARTIFACTS / "8-library-paper.png", full_page=True)
    assert "@inproceedings" in opened.inner_text() and "Ask about this paper" in opened.inner_text()


def test_the_map_draws_its_clusters(page):
    started = time.monotonic()
    page.get_by_role("link", name="Map").click()
    chart = page.locator(".st-key-map_chart .marks").first  # Vega's drawing, SVG or canvas
    chart.wait_for(timeout=60_000)
    timing("map render (20 papers)", time.monotonic() - started)
    idle(page)
    page.locator(".st-key-map_cluster").click()
    page.get_by_role("option").first.click()
    page.get_by_text("Ask about this cluster").wait_for(timeout=30_000)
    idle(page)
    page.screenshot(path=ARTIFACTS / "9-map.png", full_page=True)
    assert "papers in" in page.get_by_test_id("stMainBlockContainer").inner_text()
    box = chart.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 200, "the map is drawn at a readable size"


def test_the_table_page_fills_a_cited_cell_per_paper_and_question(page):
    page.get_by_role("link", name="Table").click()
    query = page.locator(".st-key-table-query input")
    query.wait_for(timeout=60_000)
    idle(page)
    query.fill("Which papers say their code is available?")
    page.locator(".st-key-table-columns textarea").fill("Is the code released?\nsample size\nWhat is the main result?")
    page.get_by_role("button", name="Build the table").click()
    page.get_by_test_id("stDataFrame").wait_for(timeout=120_000)
    idle(page)
    page.wait_for_timeout(800)
    page.screenshot(path=ARTIFACTS / "10-table.png", full_page=True)
    shown = page.get_by_test_id("stMainBlockContainer").inner_text()
    assert "5 papers x 3 columns" in shown
    with page.expect_download() as download:
        page.locator(".st-key-table-csv button").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert text.splitlines()[0] == "paper_id,title,Is the code released?,sample size,What is the main result?"
    assert len(text.splitlines()) == 6
