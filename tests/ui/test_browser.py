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
from conftest import PAPERS
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
    # Under load the script state can read "not running" while the first run still sends its
    # last elements (seen: the text above the examples, without them): wait for the examples.
    page.get_by_role("button", name="How does MoH work?").wait_for()
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
    page.wait_for_function("() => location.hash === '#evidence-0-1'", timeout=30_000)
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
    page.get_by_text(re.compile(r"Ask about \d+ of 20 ICML 2025 papers\.")).first.wait_for(timeout=30_000)
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
    idle(phone)
    # Nothing is wider than a phone's screen once the page is laid out (waited for, not timed).
    phone.wait_for_function(NO_OVERFLOW, timeout=30_000)
    phone.screenshot(path=ARTIFACTS / "6-phone.png", full_page=True)
    # The pages are links above the page, not behind the sidebar's "»" (issue 36); a tap
    # changes the page with nothing over it. At 1400 px the top navigation shows instead.
    pages = phone.locator(".st-key-phone-pages")
    # Drawn by the app's frame, which may come after the page's messages: waited for, not timed.
    pages.get_by_role("link").nth(4).wait_for(timeout=30_000)
    assert [t.split()[-1] for t in pages.get_by_role("link").all_inner_texts()] == ["Chat", "Library", "Table", "Map", "Evaluate"]
    pages.get_by_role("link", name="Library").click()
    phone.get_by_text("Search the papers").wait_for(timeout=60_000)
    idle(phone)
    phone.screenshot(path=ARTIFACTS / "6-phone-library.png")
    assert not phone.get_by_test_id("stSidebar").is_visible() or phone.get_by_test_id("stSidebar").bounding_box()["x"] < 0
    phone.close()
    assert not page.locator(".st-key-phone-pages").is_visible()


def test_the_library_searches_and_opens_a_paper(page):
    page.get_by_role("link", name="Library").click()
    table = page.get_by_test_id("stDataFrame")
    table.locator("th[role=columnheader]").first.wait_for(state="attached", timeout=60_000)  # the grid drawn
    idle(page)
    page.screenshot(path=ARTIFACTS / "7-library-table.png", full_page=True)
    # Every column in view at 1400 px: the grid's accessible header row holds the columns it
    # draws (before, Title, Authors and Category), and nothing scrolls sideways.
    assert table.locator("th[role=columnheader]").all_inner_texts() == ["Title", "Authors", "Category", "Venue", "Year"]
    assert table.locator(".dvn-scroller").evaluate("e => e.scrollWidth <= e.clientWidth")
    box = table.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= DESKTOP["width"]

    # A click on a title opens its paper over the table, which keeps its width. The pointer
    # moves there first, as a hand does: the grid reads the cell under it from its moves.
    cell = {"x": box["x"] + 200, "y": box["y"] + 38 + 72 + 36}  # the second row's title (rows are 72 px)
    page.mouse.move(cell["x"] - 40, cell["y"] - 20, steps=5)
    page.mouse.move(cell["x"], cell["y"], steps=10)
    page.mouse.click(cell["x"], cell["y"])
    dialog = page.get_by_role("dialog")
    ask = dialog.get_by_role("button", name="Ask about this paper")
    ask.wait_for(timeout=60_000)  # the dialog drawn whole
    idle(page)
    assert dialog.bounding_box()["width"] >= 600, "the abstract at a readable width"
    assert table.bounding_box()["width"] == box["width"], "the table is not squeezed"
    # Escape closes it, and the server forgets the click: the cell is no longer selected.
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached", timeout=30_000)
    table.locator("[aria-selected=true]").first.wait_for(state="detached", timeout=30_000)
    idle(page)

    query = page.locator(".st-key-library-query input")
    query.fill("mixture of attention heads")
    query.press("Enter")
    first = page.locator(".st-key-library-hit-1")
    first.wait_for(timeout=60_000)
    idle(page)
    page.screenshot(path=ARTIFACTS / "7-library-search.png", full_page=True)
    assert "MoH: Multi-Head Attention as Mixture-of-Head Attention" in first.inner_text()
    width = first.bounding_box()["width"]
    page.locator(".st-key-library-open-1 button").click()
    dialog.get_by_test_id("stCode").wait_for(timeout=60_000)  # the BibTeX, drawn last
    ask.wait_for()
    idle(page)
    page.screenshot(path=ARTIFACTS / "8-library-paper.png", full_page=True)
    assert "@inproceedings" in dialog.inner_text()
    assert "MoH: Multi-Head Attention as Mixture-of-Head Attention" in dialog.inner_text()
    assert first.bounding_box()["width"] == width, "the results are not squeezed"
    page.locator(".st-key-library-close button").click()
    dialog.wait_for(state="detached", timeout=30_000)  # closed by the server's run
    idle(page)

    # A query no paper meets whole says so above its hits, each tagged partial (issue 36).
    query.fill("graph neural")
    query.press("Enter")
    page.get_by_text("No paper meets").wait_for(timeout=60_000)
    idle(page)
    page.screenshot(path=ARTIFACTS / "7-library-partial.png", full_page=True)
    assert "partial match" in page.locator(".st-key-library-hit-1").inner_text()


def test_the_map_draws_its_clusters(page):
    import numpy as np
    from PIL import Image

    from rag.index.corpusmap import palette

    started = time.monotonic()
    page.get_by_role("link", name="Map").click()
    chart = page.locator(".st-key-map_chart .marks").first  # Vega's drawing, SVG or canvas
    chart.wait_for(timeout=60_000)
    timing("map render (20 papers)", time.monotonic() - started)
    idle(page)
    page.locator(".st-key-map_cluster").click()
    page.get_by_role("option").first.click()
    # The 20 bundled papers are grouped by their categories' six areas.
    page.get_by_text("Ask about this category").wait_for(timeout=30_000)
    idle(page)
    page.get_by_test_id("stDataFrame").locator("canvas").first.wait_for()
    page.wait_for_timeout(800)
    page.screenshot(path=ARTIFACTS / "9-map.png", full_page=True)
    shown = page.get_by_test_id("stMainBlockContainer").inner_text()
    assert "20 papers in 6 categories" in shown and "8 papers, the most typical first" in shown, shown
    box = chart.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 200, "the map is drawn at a readable size"
    # The legend: Vega draws on a canvas, so it is found by its colours. Once a category is
    # chosen the others' points are faint, so each group's full colour is its legend symbol.
    chart.screenshot(path=ARTIFACTS / "9-map-chart.png")
    pixels = np.asarray(Image.open(ARTIFACTS / "9-map-chart.png").convert("RGB"), dtype=int)
    for colour in palette(6):
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(pixels - rgb).sum(axis=2) < 30).sum() > 30, f"no legend symbol in {colour}"


def test_a_collection_answer_becomes_a_research_table_that_grows_exports_and_survives_a_reload(browser, server):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # A session of its own: the filters the chat's tests chose would narrow the answer.
    page = browser.new_page(viewport=DESKTOP, accept_downloads=True)
    page.goto(server.url)
    page.get_by_test_id("stChatInputTextArea").wait_for(timeout=90_000)
    ask(page, "Which papers say their code is available?", 0)
    page.get_by_role("button", name="Open as a table").click()
    columns = page.locator(".st-key-table-columns textarea")
    columns.wait_for(timeout=60_000)
    idle(page)
    assert "the papers the chat's answer lists" in page.get_by_test_id("stMainBlockContainer").inner_text()
    columns.fill("Is the code released?\nsample size\nWhat is the main result?")
    page.locator(".st-key-table-build button").click()
    page.get_by_text("5 papers × 3 columns").wait_for(timeout=120_000)
    idle(page)

    page.locator(".st-key-table-new-column input").fill("What data does it use?")
    page.get_by_role("button", name="Add column").click()
    page.get_by_text("5 papers × 4 columns").wait_for(timeout=120_000)
    idle(page)
    # A click on a cell opens its evidence: the score and the abstract with the sentence marked.
    grid = page.get_by_test_id("stDataFrame").bounding_box()
    # The grid is a canvas: the pointer moves onto the first row's first question cell, then
    # clicks. A canvas still settling after a rerun can miss a click, so it is clicked again until
    # the evidence shows.
    evidence = page.locator(".st-key-table-evidence")
    for step in range(4):
        page.mouse.move(grid["x"] + 340 + step * 10, grid["y"] + 40 + 50)
        page.mouse.down()
        page.mouse.up()
        try:
            evidence.wait_for(timeout=30_000)
            break
        except PlaywrightTimeout:
            idle(page)
    evidence.wait_for(timeout=30_000)
    idle(page)
    page.wait_for_timeout(800)
    page.screenshot(path=ARTIFACTS / "10-table.png", full_page=True)
    assert "Score " in page.locator(".st-key-table-evidence").inner_text()

    with page.expect_download() as download:
        page.locator(".st-key-table-csv button").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    header = "paper_id,title,Is the code released?,sample size,What is the main result?,What data does it use?"
    assert text.splitlines()[0] == header
    assert len(text.splitlines()) == 6

    assert "c=" in page.url, "the table's conversation is in the address"
    page.reload()
    page.get_by_text("5 papers × 4 columns").wait_for(timeout=90_000)
    idle(page)
    page.wait_for_timeout(800)
    page.screenshot(path=ARTIFACTS / "10-table-after-reload.png", full_page=True)
    page.close()


# --- the chat's layout ------------------------------------------------------------------------

LAPTOP = {"width": 1400, "height": 900}
OPTIMIZATION = "List papers on optimization"  # eight papers: a long answer, its evidence beside it
# Whether the page has brought the latest of its `questions` questions into view (it says so
# once it stays put), and that question's top is in the upper third of the view.
QUESTION_ON_TOP = """questions => {
  if (document.body.dataset.questionShown !== String(questions)) return false;
  const asked = document.querySelectorAll('[data-testid="stChatMessageAvatarUser"]');
  const top = asked[asked.length - 1].closest('[data-testid="stChatMessage"]').getBoundingClientRect().top;
  return top >= 0 && top < window.innerHeight / 3;
}"""
# Whether the evidence card an anchor leads to is open and its top in view.
CARD_SHOWN = """id => {
  const card = document.getElementById(id).closest('[data-testid="stElementContainer"]').nextElementSibling.querySelector("details");
  const top = card.getBoundingClientRect().top;
  return card.open && top >= 0 && top < window.innerHeight - 80;
}"""


def settled(page, answer: int) -> None:
    """Wait until answer `answer` (from 0) is drawn whole, with its evidence, and its question is
    at the top of the view."""
    page.get_by_test_id("stChatMessage").nth(2 * answer + 1).get_by_test_id("stExpander").first.wait_for(timeout=120_000)
    idle(page)
    page.wait_for_function(QUESTION_ON_TOP, arg=answer + 1, timeout=30_000)


def fresh_chat(browser, server, viewport, **options):
    """A session of its own (the filters other tests chose stay in theirs), its chat box ready."""
    page = browser.new_page(viewport=viewport, accept_downloads=True, **options)
    page.goto(server.url)
    page.get_by_test_id("stChatInputTextArea").wait_for(timeout=90_000)
    idle(page)
    return page


def test_chat_a_long_answer_has_its_evidence_beside_it_and_shows_its_question_and_its_cards(browser, server):
    page = fresh_chat(browser, server, LAPTOP)
    answer, _, _ = ask(page, OPTIMIZATION, 0)
    # The page does not stay at its foot: the question is on top, the answer under it.
    page.wait_for_function(QUESTION_ON_TOP, arg=1, timeout=30_000)
    page.screenshot(path=ARTIFACTS / "11-chat-evidence-beside.png")
    # Beside the answer, the evidence is a panel as tall as the answer that scrolls within.
    panel = page.locator(".st-key-evidence-beside-0").locator("xpath=ancestor::div[@data-testid='stColumn'][1]")
    text = panel.locator("xpath=preceding-sibling::div[@data-testid='stColumn'][1]")
    assert abs(panel.bounding_box()["height"] - text.bounding_box()["height"]) <= 2, "no blank space beside the answer"
    assert panel.evaluate("column => column.firstElementChild.scrollHeight > column.firstElementChild.clientHeight")
    assert answer.get_by_test_id("stExpander").nth(3).evaluate("card => !card.querySelector('details').open"), "[4] is folded"

    # A click on [4] opens its folded card and shows it; the hover keeps the sentence.
    link = answer.get_by_role("link", name="[4]").first
    assert "“" in link.get_attribute("title")
    link.click()
    page.wait_for_function(CARD_SHOWN, arg="evidence-0-4", timeout=10_000)
    page.screenshot(path=ARTIFACTS / "11-chat-citation-opened.png")

    page.reload()
    settled(page, 0)
    page.screenshot(path=ARTIFACTS / "11-chat-after-reload.png")

    # On a phone the evidence follows the answer, and a tap on [5] opens its card.
    phone = browser.new_page(viewport=PHONE, has_touch=True)
    phone.goto(page.url)
    phone.get_by_test_id("stChatMessage").nth(1).get_by_test_id("stExpander").first.wait_for(timeout=60_000)
    idle(phone)
    phone.wait_for_function(QUESTION_ON_TOP, arg=1, timeout=30_000)
    phone.screenshot(path=ARTIFACTS / "11-chat-phone.png")
    assert phone.evaluate(NO_OVERFLOW)
    phone.get_by_test_id("stChatMessage").nth(1).get_by_role("link", name="[5]").first.tap()
    phone.wait_for_function(CARD_SHOWN, arg="evidence-0-5", timeout=10_000)
    phone.screenshot(path=ARTIFACTS / "11-chat-phone-tap.png")
    phone.close()
    page.close()


def test_chat_a_short_answer_and_a_comparison_take_the_full_width(browser, server):
    page = fresh_chat(browser, server, LAPTOP)
    answer, _, _ = ask(page, ATTENTION, 0)
    page.wait_for_function(QUESTION_ON_TOP, arg=1, timeout=30_000)
    page.screenshot(path=ARTIFACTS / "12-chat-short-answer.png")
    # Measured at once: the view may still be settling.
    width, text_bottom, card = answer.evaluate("""message => [
      message.querySelector('[data-testid="stChatMessageContent"]').getBoundingClientRect().width,
      message.querySelector('[data-testid="stMarkdownContainer"]:has(a[href^="#evidence-"])').getBoundingClientRect().bottom,
      message.querySelector('[data-testid="stExpander"]').getBoundingClientRect().toJSON(),
    ]""")
    assert card["top"] >= text_bottom and card["width"] >= 0.95 * width, "the evidence follows the answer, at full width"

    compared, _, _ = ask(page, "Compare MoH and Flat-LoRA", 1)
    page.wait_for_function(QUESTION_ON_TOP, arg=2, timeout=30_000)
    page.screenshot(path=ARTIFACTS / "12-chat-comparison.png")
    table = compared.locator("table").first
    assert table.bounding_box()["width"] >= 0.95 * width
    cells = [box["width"] for box in (th.bounding_box() for th in table.locator("th").all()[1:])]
    assert len(cells) == 4 and min(cells) >= 150, cells
    for name in ("CSV", "Markdown"):
        button = compared.get_by_role("button", name=name)
        assert button.inner_text().strip().endswith(name), "labelled by its format, not cut"
        assert button.evaluate("b => b.scrollWidth <= b.clientWidth")
    compared.get_by_role("button", name="CSV").evaluate("button => button.scrollIntoView({block: 'center'})")
    page.screenshot(path=ARTIFACTS / "12-chat-comparison-downloads.png")
    with page.expect_download() as download:
        compared.get_by_role("button", name="CSV").click()
    assert Path(download.value.path()).read_text(encoding="utf-8").startswith("Paper,")

    phone = browser.new_page(viewport=PHONE)
    phone.goto(page.url)
    phone.get_by_test_id("stChatMessage").nth(3).locator("table").wait_for(timeout=60_000)
    idle(phone)
    phone.wait_for_function(QUESTION_ON_TOP, arg=2, timeout=30_000)
    phone.screenshot(path=ARTIFACTS / "12-chat-comparison-phone.png")
    assert phone.evaluate(NO_OVERFLOW), "the table scrolls in its own box, not the page"
    phone.close()
    page.close()


def test_chat_the_chip_counts_the_filtered_papers_and_the_list_dates_its_conversations(browser, server):
    page = fresh_chat(browser, server, LAPTOP)
    author = page.get_by_test_id("stSidebar").get_by_placeholder("a name, or a word of one")
    author.fill("Yuan")
    author.press("Enter")
    page.get_by_text("Ask about 1 of 20 ICML 2025 papers.").wait_for(timeout=30_000)
    idle(page)
    answer, _, _ = ask(page, "What do these papers propose?", 0)
    page.wait_for_function(QUESTION_ON_TOP, arg=1, timeout=30_000)
    assert "1 of 20 ICML 2025 papers" in answer.inner_text(), "the turn's corpus chip"
    rows = page.locator("[class*='st-key-conversation-open-'] button").all_inner_texts()
    assert rows and all(re.match(r"(chat\s*)?(\d\d:\d\d|[A-Z][a-z]{2} \d{1,2})", row) for row in rows), rows
    page.screenshot(path=ARTIFACTS / "13-chat-filtered-chip.png")

    # A second conversation whose question reads as the first's up to where its row is cut: each
    # row shows where the two part.
    page.get_by_test_id("stSidebar").get_by_role("button", name="New conversation").click()
    page.get_by_text("Try one of these").wait_for(timeout=30_000)
    ask(page, "What do these papers propose to make training cheaper?", 0)
    rows = page.locator("[class*='st-key-conversation-open-'] button")
    page.wait_for_function(
        "() => [...document.querySelectorAll(\"[class*='st-key-conversation-open-'] button\")].some(b => b.innerText.includes('What … to make training'))"
    )
    texts = rows.all_inner_texts()
    assert any("What … propose?" in row for row in texts), texts
    page.get_by_test_id("stSidebar").screenshot(path=ARTIFACTS / "13-chat-titles-alike.png")
    page.close()


def test_chat_an_empty_index_says_how_to_add_papers_and_takes_no_question(browser, tmp_path):
    from load_ui import serve

    with serve(tmp_path / "empty", wait_s=300) as empty:  # far above need: only against a hang
        page = browser.new_page(viewport=LAPTOP)
        page.goto(empty.url)
        page.get_by_text("Index the bundled papers").wait_for(timeout=90_000)
        idle(page)
        page.screenshot(path=ARTIFACTS / "14-chat-empty-index.png")
        shown = page.get_by_test_id("stMainBlockContainer").inner_text()
        assert "no papers" not in shown and "paperchat ingest FILE" in shown and "Library page" in shown
        assert page.get_by_test_id("stChatInputTextArea").is_disabled()
        page.close()


def test_chat_a_follow_up_naming_a_paper_a_decline_ruled_out_asks_first_and_authors_resolve(browser, server):
    page = fresh_chat(browser, server, LAPTOP)
    declined, _, _ = ask(page, "Which papers detect bugs in smart contracts?", 0)
    # The closest papers, not cited, in order of similarity.
    shown = [float(s) for s in re.findall(r"similarity (\d\.\d\d)", declined.inner_text())]
    assert len(shown) >= 3 and shown == sorted(shown, reverse=True), shown
    page.screenshot(path=ARTIFACTS / "15-followup-closest-in-order.png")

    page.get_by_test_id("stChatInputTextArea").fill("summarize the second one")
    page.keyboard.press("Enter")
    asked_back = page.get_by_test_id("stChatMessage").nth(3)
    asked_back.get_by_text("which it does not cite").wait_for(timeout=120_000)
    idle(page)
    page.wait_for_function(QUESTION_ON_TOP, arg=2, timeout=30_000)
    page.screenshot(path=ARTIFACTS / "15-followup-asks-first.png")
    # The second of the closest papers listed, whichever the vectors put there.
    [title] = re.findall(r"^\[2\] (.+)$", declined.inner_text(), flags=re.MULTILINE)
    assert title in asked_back.inner_text() and "Summarize it anyway?" in asked_back.inner_text()
    # Taken up, it is summarized; the reference was not resolved silently before.
    asked_back.get_by_role("button", name=title).click()
    summary = page.get_by_test_id("stChatMessage").nth(5)
    summary.get_by_test_id("stExpander").first.wait_for(timeout=120_000)
    idle(page)
    assert title.split(":")[0] in summary.inner_text()

    ask(page, "What do the ICML 2025 papers propose?", 3)
    by_yuan, _, _ = ask(page, "summarize the one by Yuan", 4)
    page.wait_for_function(QUESTION_ON_TOP, arg=5, timeout=30_000)
    page.screenshot(path=ARTIFACTS / "15-followup-by-author.png")
    assert "MoH" in by_yuan.inner_text()
    page.close()


def test_an_evaluation_leads_with_a_verdict_per_group(page):
    # Issue 36: 19 metrics and no verdict; lower-is-better metrics unmarked.
    page.get_by_role("link", name="Evaluate").click()
    limit = page.get_by_role("spinbutton", name="Limit")
    limit.wait_for(timeout=60_000)
    limit.fill("3")
    limit.press("Enter")
    idle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("Retrieval:").wait_for(timeout=180_000)
    page.get_by_test_id("stDataFrame").locator("canvas").first.wait_for()
    idle(page)
    page.wait_for_timeout(800)
    page.screenshot(path=ARTIFACTS / "16-evaluate-verdicts.png", full_page=True)
    shown = page.get_by_test_id("stMainBlockContainer").inner_text()
    assert "Citations:" in shown and "Declines:" in shown


def test_chat_a_follow_up_is_on_top_while_its_answer_is_still_coming(browser, tmp_path, monkeypatch, embeddings):
    """The question goes to the top of the view as soon as it is asked, not once the answer is
    drawn: the model's reply is held until the test has seen it there."""
    import contextlib
    import threading

    from fake_openai import FakeOpenAI
    from load_ui import serve

    from rag.corpus.reading import load_corpus
    from rag.index.store import Index
    from rag.settings import Settings

    replying = threading.Event()
    replying.set()

    def reply(body: dict) -> str:
        replying.wait(timeout=300)  # far above need: only against a test that never releases it
        return "Mixture-of-Head attention lets each token use only the heads it needs [1]."

    Index(Settings(data_dir=tmp_path / "index"), embeddings).ingest(load_corpus(PAPERS))
    # Released however the test ends, so the server stops at once.
    with FakeOpenAI(reply=reply) as model, contextlib.ExitStack() as release:
        release.callback(replying.set)
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        with serve(tmp_path / "index", backend="openai", wait_s=300) as ui:
            page = browser.new_page(viewport={"width": 1400, "height": 700})
            page.goto(ui.url)
            page.get_by_test_id("stChatInputTextArea").wait_for(timeout=90_000)
            idle(page)
            ask(page, OPTIMIZATION, 0)
            page.wait_for_function(QUESTION_ON_TOP, arg=1, timeout=30_000)
            replying.clear()
            asked = len(model.requests)
            page.get_by_test_id("stChatInputTextArea").fill("How does MoH pick its attention heads?")
            page.keyboard.press("Enter")
            deadline = time.monotonic() + 120  # far above need: only against a request that never comes
            while len(model.requests) == asked and time.monotonic() < deadline:
                page.wait_for_timeout(100)
            assert len(model.requests) > asked, "the follow-up reached the model, which holds its reply"
            page.wait_for_function(QUESTION_ON_TOP, arg=2, timeout=30_000)
            assert page.get_by_test_id("stChatMessage").nth(3).get_by_test_id("stExpander").count() == 0, "still answering"
            page.screenshot(path=ARTIFACTS / "17-follow-up-on-top-while-answering.png")
            replying.set()
            settled(page, 1)
            page.screenshot(path=ARTIFACTS / "17-follow-up-answered.png")
            page.close()


def test_a_browser_in_chinese_gets_the_app_in_chinese(browser, server):
    """The app's language follows the browser's (PAPERCHAT_LANG unset): the pages, the chat box
    and a Chinese question's answer are in Chinese, its quotes in the abstract's English."""
    page = fresh_chat(browser, server, LAPTOP, locale="zh-CN")
    assert page.get_by_test_id("stChatInputTextArea").get_attribute("placeholder") == "就这些论文提问"
    assert page.get_by_role("link", name="文献库").first.is_visible()
    answer, _, _ = ask(page, "有没有让每个词只用一部分注意力头的工作？", 0)
    page.wait_for_function(QUESTION_ON_TOP, arg=1, timeout=30_000)
    assert "最接近的是 MoH [1]" in answer.inner_text() and "Mixture-of-Head attention" in answer.inner_text()
    page.screenshot(path=ARTIFACTS / "18-chat-chinese.png")
    page.close()


def test_a_browser_in_chinese_gets_every_page_in_chinese(browser, server):
    """The Library, Table, Map and Evaluate pages in a browser whose language is Chinese: their
    headings, labels, tables' columns and messages in Chinese, and drawn in letters, not boxes."""
    page = fresh_chat(browser, server, DESKTOP, locale="zh-CN")

    def visit(link: str, heading: str):
        page.get_by_role("link", name=link).first.click()
        page.get_by_role("heading", name=heading, exact=True).wait_for(timeout=60_000)
        return page.get_by_test_id("stMainBlockContainer")

    main = visit("文献库", "文献库")
    table = page.get_by_test_id("stDataFrame")
    table.locator("th[role=columnheader]").first.wait_for(state="attached", timeout=60_000)
    idle(page)
    page.screenshot(path=ARTIFACTS / "19-library-chinese.png", full_page=True)
    assert table.locator("th[role=columnheader]").all_inner_texts() == ["标题", "作者", "类别", "会议", "年份"]
    assert "20 篇论文" in main.inner_text() and "添加论文" in main.inner_text()

    main = visit("表格", "研究表格")
    page.locator(".st-key-table-query input").fill("Which papers say their code is available?")
    page.locator(".st-key-table-columns textarea").fill("Is the code released?\nsample size")
    page.get_by_role("button", name="生成表格").click()
    page.get_by_text(re.compile(r"^\d+ 篇论文 × 2 列$")).wait_for(timeout=120_000)
    page.get_by_test_id("stDataFrame").locator("canvas").first.wait_for()
    idle(page)
    page.screenshot(path=ARTIFACTS / "19-table-chinese.png", full_page=True)
    assert "个单元格中有" in main.inner_text() and page.get_by_role("button", name="添加列").is_visible()

    main = visit("地图", "文献地图")
    page.locator(".st-key-map_chart .marks").first.wait_for(timeout=60_000)
    idle(page)
    page.locator(".st-key-map_cluster").click()
    page.get_by_role("option").first.click()
    page.get_by_role("button", name="就这个类别提问").wait_for(timeout=30_000)
    page.get_by_test_id("stDataFrame").locator("canvas").first.wait_for()
    idle(page)
    page.screenshot(path=ARTIFACTS / "19-map-chinese.png", full_page=True)
    assert "20 篇论文，分为 6 个类别" in main.inner_text()

    main = visit("评测", "评测")
    limit = page.get_by_role("spinbutton", name="上限")
    limit.fill("3")
    limit.press("Enter")
    idle(page)
    page.get_by_role("button", name="运行", exact=True).click()
    page.get_by_text(re.compile(r"个问题 · 后端 ")).first.wait_for(timeout=180_000)
    page.get_by_test_id("stDataFrame").locator("canvas").first.wait_for()
    idle(page)
    page.screenshot(path=ARTIFACTS / "19-evaluate-chinese.png", full_page=True)
    assert page.get_by_role("heading", name="过往报告").is_visible()
    shown = main.inner_text()
    assert "Question set" not in shown and "Past reports" not in shown
    # The verdicts and what each metric measures (the table's cells, as its accessible grid holds them).
    assert "检索：良好（Recall@5 " in shown and "Retrieval: good" not in shown, shown
    metrics = page.get_by_test_id("stDataFrame").first.locator("td").all_inner_texts()
    assert "金标论文中排在第 1 位的比例。" in metrics and "Share of the gold papers ranked first." not in metrics, metrics
    page.close()
