"""The Streamlit chat, driven headless with AppTest over a real index and the offline backend."""

from __future__ import annotations

import json
import re
import socket
import tempfile

import pytest
import streamlit as st
from conftest import PAPERS, answer_text, ask, library_count, plain, source_labels, uploads, writer_holding
from fake_openai import FakeOpenAI, Fault
from streamlit.testing.v1 import AppTest

from rag.corpus.reading import load_corpus
from rag.index.store import Index
from rag.records import Paper
from rag.settings import Settings

pytestmark = pytest.mark.slow

ATTENTION = "Which papers make attention cheaper, and how?"
HOSTILE_TITLE = "<script>alert(1)</script> **bold** Sourdough Fermentation Networks"
HOSTILE = Paper(
    id="hostile",
    title=HOSTILE_TITLE,
    authors=("Mallory _Evil_ Example",),
    abstract="We model sourdough fermentation with a small neural network that predicts how far the "
    "dough rises from temperature and hydration. See [the demo](javascript:alert(1)) and $x$.",
    category="Applications · Food",
    venue="ICML 2025",
    year=2025,
    url="javascript:alert(1)",
)


def test_first_open_says_what_is_loaded_offers_three_examples_and_keeps_developer_details_apart(open_app):
    at = open_app()
    assert at.title[0].value == "PaperChat"
    assert plain(at.caption[0].value).startswith("Ask about 20 ICML 2025 papers.")
    labels = [plain(b.label) for b in at.button]
    assert labels[:2] == ["Which papers work on Large Language Models?", "How does MoH work?"]
    assert labels[2].startswith("Summarize “") and len(labels) == 3
    assert not at.chat_message and not at.sidebar.download_button
    # Chunks, the embedding model and why this backend: in the "About this index" expander only.
    [about] = [e for e in at.sidebar.expander if e.label == "About this index"]
    assert not about.proto.expanded
    assert {m.label: m.value for m in about.metric} == {"Papers": "20", "Chunks": "25", "Categories": "15"}
    assert "OPENAI_API_KEY" in " ".join(plain(c.value) for c in about.caption)
    outside = [c for c in at.sidebar.caption if c not in about.caption]
    assert not any("Embeddings" in c.value or "OPENAI_API_KEY" in c.value for c in outside)

    summarize = next(b for b in at.button if plain(b.label).startswith("Summarize “"))
    title = plain(summarize.label).removeprefix("Summarize “").removesuffix("”")
    summarize.click().run()
    assert not at.exception
    assert [m.name for m in at.chat_message] == ["user", "assistant"]
    # A summary cites the one paper it summarizes; nothing else is retrieved.
    assert [plain(label) for label in source_labels(at.chat_message[1])] == [f"[1] {title}"]
    assert not [b for b in at.button if b.key.startswith("example-")]  # the examples are gone once there is a conversation
    assert [b.label for b in at.sidebar.download_button] == ["Conversation (Markdown)", "Cited papers (BibTeX)"]


def test_question_streams_a_cited_answer_with_its_evidence_and_scope_beside_it(open_app):
    at = ask(open_app(), ATTENTION)
    assert [m.name for m in at.chat_message] == ["user", "assistant"]
    reply = at.chat_message[1]
    chips = reply.markdown[0].value
    assert chips.startswith(":gray-badge[:material/library_books: 20 ICML 2025 papers]") and "extractive]" in chips
    # Each [n] links to its evidence card, its hover the title and the supporting sentence.
    text = answer_text(reply)
    link = re.search(r'\[\[1\]\]\(#evidence-0-1 "MoH: Multi-Head Attention as Mixture-of-Head Attention — “([^"]+)”"\)', text)
    assert link, text
    labels = source_labels(reply)
    assert labels[0].startswith("[1] MoH")
    card = reply.expander[0]
    assert card.proto.expanded, "the evidence is open beside the answer"
    shown = " ".join(plain(m.value) for m in card.markdown)
    assert "Peng Jin" in shown and "Mixture-of-Head attention (MoH)" in shown
    # The supporting sentence is highlighted within the abstract.
    [abstract] = [m.value for m in card.markdown if ":orange-background[" in m.value]
    assert abstract.startswith("In this work, we upgrade") and plain(link[1])[:40] in plain(abstract)
    assert "Deep Learning · Attention Mechanisms" in card.caption[0].value
    assert any(c.value.startswith(":green-badge[match] meets attention") for c in card.caption)
    assert card.get("link_button")[0].proto.url.startswith("https://icml.cc/")
    uncited = [e for e in reply.expander if e.label.startswith("Retrieved but not cited")]
    assert len(uncited) == 1 and uncited[0].caption, "the near misses are listed apart, not cited"


def test_follow_up_is_rewritten_from_history(open_app):
    at = ask(ask(open_app(), ATTENTION), "summarize the first one")
    assert [m.name for m in at.chat_message] == ["user", "assistant"] * 2
    follow_up = at.chat_message[3]
    searched = [plain(c.value) for c in follow_up.caption if c.value.startswith("Searched for:")]
    assert len(searched) == 1 and "MoH" in searched[0]
    assert source_labels(follow_up)[0].startswith("[1] MoH")
    # The first turn is still drawn, from its stored Answer.
    assert "**MoH**: “" in answer_text(at.chat_message[1])


def test_an_unclear_follow_up_offers_the_cited_papers_as_buttons_that_answer(open_app):
    at = ask(ask(open_app(), "Which papers are about bandits?"), "summarize the third one")
    cited = [plain(label).split("] ", 1)[1] for label in source_labels(at.chat_message[1])]
    assert 1 <= len(cited) < 3, "the bandits answer cites fewer than three papers"
    clarify = at.chat_message[3]
    assert plain(answer_text(clarify)).startswith("Which paper do you mean by “the third one”?")
    assert not source_labels(clarify), "nothing was retrieved for it"
    choices = [b for b in clarify.button if b.key.startswith("choice-")]
    assert [plain(b.label) for b in choices] == cited

    choices[-1].click().run()
    assert not at.exception
    assert [m.name for m in at.chat_message] == ["user", "assistant"] * 3
    assert plain(at.chat_message[4].markdown[0].value) == f'summarize "{cited[-1]}"'
    assert [plain(label) for label in source_labels(at.chat_message[5])] == [f"[1] {cited[-1]}"]


def test_category_filter_limits_the_sources(open_app):
    papers = load_corpus(PAPERS).papers
    theory = next(p.category for p in papers if p.category.startswith("Theory"))
    at = open_app()
    at.sidebar.selectbox[0].set_value(theory)
    reply = ask(at, ATTENTION).chat_message[1]
    assert not any(label.startswith("[1] MoH") for label in source_labels(reply))
    # Every paper shown, cited or not, carries its category in a caption (after it, how it meets the question).
    captions = [plain(c.value) for e in reply.expander for c in e.caption if "match]" not in c.value]
    in_category = sum(1 for p in papers if p.category == theory)
    assert len(captions) == in_category and all(theory in c for c in captions)


def test_corpus_text_is_shown_escaped_never_as_markup(open_app, tmp_path, embeddings, fresh_assistant):
    Index(Settings(data_dir=tmp_path), embeddings).ingest([HOSTILE])
    at = open_app(tmp_path)
    button = at.button[-1]
    assert "\\<script\\>" in button.label and "<script>" not in button.label
    button.click().run()
    assert not at.exception
    [label] = source_labels(at.chat_message[1])
    assert label == "[1] \\<script\\>alert\\(1\\)\\</script\\> \\*\\*bold\\*\\* Sourdough Fermentation Networks"
    card = at.chat_message[1].expander[0]
    values = [m.value for m in card.markdown] + [c.value for c in card.caption]
    assert "Mallory \\_Evil\\_ Example" in values
    # Markup is escaped (the sentence is highlighted as the summary's support, in plain text).
    assert any(":orange-background[" in v and "See \\[the demo\\]\\(javascript\\:alert\\(1\\)\\) and x." in v for v in values)
    assert not card.get("link_button")  # not an http(s) address: shown as text, not as a link
    assert "<script>" not in at.chat_message[0].markdown[0].value
    # HTML is allowed only for the evidence cards' anchors, which hold no corpus text.
    html = [m.value for m in at.get("markdown") + at.get("caption") if m.proto.allow_html]
    assert html and all(re.fullmatch(r'<div id="evidence-\d+-\d+"></div>', v) for v in html)


def test_backend_error_is_a_message_and_the_conversation_survives(open_app, fresh_assistant):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # A strict model floor (the default lets the model judge nearly everything): the off-topic
    # question is declined before any model call, and that turn is kept.
    at = open_app(OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", PAPERCHAT_MODEL_FLOOR="0.3")
    assert "openai" in at.sidebar.markdown[0].value
    ask(at, "What is the best recipe for sourdough bread?")
    ask(at, ATTENTION)
    assert [m.name for m in at.chat_message] == ["user", "assistant"] * 2
    [error] = at.chat_message[3].error
    assert f"127.0.0.1:{port}" in plain(error.value) and "OPENAI_BASE_URL" in plain(error.value)
    assert not at.exception
    assert at.sidebar.download_button  # the first turn is still in the history

    [offline] = [b for b in at.button if b.label == "Answer from the abstracts instead"]
    offline.click().run()
    assert not at.exception
    assert [m.name for m in at.chat_message] == ["user", "assistant"] * 2, "the failed turn is answered, not added"
    answer = at.chat_message[3]
    assert plain(at.chat_message[2].markdown[0].value) == ATTENTION
    assert not answer.error and source_labels(answer), "answered from the abstracts, with its sources"
    assert "openai" in at.sidebar.markdown[0].value, "the chat's backend stays the model"


def test_an_answer_cut_off_mid_stream_is_kept_marked_and_can_be_answered_offline(open_app, fresh_assistant, no_proxy):
    reply = "Mixture-of-Head attention lets each token choose its attention heads [1]."
    with FakeOpenAI(reply=reply, chunk_size=10, faults=[Fault(after=3, drop=True)]) as server:
        at = open_app(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test", PAPERCHAT_OPENAI_MODEL="fake")
        ask(at, ATTENTION)
    answer = at.chat_message[1]
    assert plain(answer_text(answer)).startswith("Mixture-of-Head attention")
    [error] = answer.error
    assert plain(error.value).startswith(f"Answer cut off: connection lost to fake at {server.base_url}")
    [offline] = [b for b in answer.button if b.label == "Answer from the abstracts instead"]
    offline.click().run()
    assert not at.exception
    assert [m.name for m in at.chat_message] == ["user", "assistant"] * 2
    assert not at.chat_message[3].error and source_labels(at.chat_message[3])


def test_an_empty_index_offers_to_index_the_bundled_papers(open_app, tmp_path, fresh_assistant):
    at = open_app(tmp_path / "empty")
    assert "is empty" in plain(at.info[0].value)
    [index] = [b for b in at.button if b.label == "Index the bundled papers"]
    index.click().run()
    assert not at.exception
    assert plain(at.caption[0].value).startswith("Ask about 20 ICML 2025 papers.")
    assert plain(at.button[0].label) == "Which papers work on Large Language Models?"


def test_a_turn_carries_its_filter_as_a_chip(open_app):
    at = open_app()
    at.sidebar.selectbox[0].set_value("Deep Learning · Attention Mechanisms")
    reply = ask(at, ATTENTION).chat_message[1]
    chips = reply.markdown[0].value
    assert ":blue-badge[:material/filter_alt: category Deep Learning · Attention Mechanisms]" in chips
    # The chip stays with its turn when the filter changes for the next.
    at.sidebar.selectbox[0].set_value("All").run()
    assert "category Deep Learning · Attention Mechanisms" in at.chat_message[1].markdown[0].value


def test_a_weak_hit_is_greyed_and_says_so(open_app):
    reply = ask(open_app(), ATTENTION).chat_message[1]
    [uncited] = [e for e in reply.expander if e.label.startswith("Retrieved but not cited")]
    titles = [m.value for m in uncited.markdown]
    weak = [c.value for c in uncited.caption if c.value.startswith(":gray-badge[weak match]")]
    assert weak, "some of the five papers retrieved for an attention question barely meet it"
    assert sum(":gray[" in t for t in titles) == len(weak), "each weak hit's title is greyed"


def test_a_bad_setting_is_a_message_in_the_app(open_app, fresh_assistant):
    at = open_app(PAPERCHAT_K="0")
    [error] = at.error
    assert "PAPERCHAT_K is '0'" in plain(error.value) and "docs/settings.md" in plain(error.value)


def library(at: AppTest) -> AppTest:
    """To the Library page, where papers are added."""
    at.switch_page("library.py").run()
    assert not at.exception
    return at


def paper_count(at: AppTest) -> int:
    return int(library_count(at).split()[0].replace(",", ""))


def ingest_upload(at: AppTest, name: str, data: bytes) -> AppTest:
    uploads(at).file_uploader[0].set_value((name, data, "application/jsonl")).run()
    next(b for b in uploads(at).button if b.label == "Ingest").click().run()
    assert not at.exception
    return at


def test_upload_of_a_bad_file_shows_its_line_and_changes_nothing(open_app, tmp_path, embeddings, fresh_assistant):
    data_dir = tmp_path / "index"
    Index(Settings(data_dir=data_dir), embeddings).ingest(load_corpus(PAPERS))
    at = library(open_app(data_dir))
    assert paper_count(at) == 20
    bad = b'{"id": "n1", "title": "New", "abstract": "A new abstract about graphs."}\n{"id": "n2", "title": "No abstract"}\n'
    ingest_upload(at, "bad.jsonl", bad)
    assert any("bad.jsonl:2" in e.value for e in uploads(at).error)
    assert paper_count(at) == 20

    uploads(at).checkbox[0].check().run()
    next(b for b in uploads(at).button if b.label == "Ingest").click().run()
    assert not at.exception
    assert paper_count(at) == 21
    assert "1 added" in uploads(at).success[0].value and "1 skipped" in uploads(at).success[0].value
    assert any("bad.jsonl:2" in plain(c.value) for c in uploads(at).caption)


def test_an_upload_over_the_size_limit_is_refused_and_changes_nothing(open_app, fresh_assistant):
    at = library(open_app(PAPERCHAT_MAX_UPLOAD_MB="1"))
    # The browser is told the same limit, so it refuses such a file before sending it.
    assert uploads(at).file_uploader[0].proto.max_upload_size_mb == 1
    line = b'{"id": "n1", "title": "New", "abstract": "A new abstract about graphs."}\n'
    ingest_upload(at, "big.jsonl", line + b" " * (1 << 20))
    [error] = uploads(at).error
    assert plain(error.value).startswith("big.jsonl is over 1 MB, the most an upload may be (PAPERCHAT_MAX_UPLOAD_MB)")
    assert "paperchat ingest" in plain(error.value)
    assert paper_count(at) == 20 and not uploads(at).success

    # Above Streamlit's own server.maxUploadSize (200 MB) the browser is told that one instead.
    st.cache_resource.clear()
    assert uploads(library(open_app(PAPERCHAT_MAX_UPLOAD_MB="500"))).file_uploader[0].proto.max_upload_size_mb == 200


def test_a_hostile_upload_name_is_ingested_and_writes_nothing_outside(open_app, tmp_path, embeddings, fresh_assistant, monkeypatch):
    data_dir = tmp_path / "index"
    Index(Settings(data_dir=data_dir), embeddings).ingest([HOSTILE])
    temp = tmp_path / "temp" / "deep"
    temp.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    at = library(open_app(data_dir))
    assert paper_count(at) == 1

    name = "../../escaped.jsonl"
    ingest_upload(at, name, b'{"id": "n1", "title": "New", "abstract": "A new abstract about graphs."}\n')
    assert paper_count(at) == 2
    assert plain(uploads(at).success[0].value).startswith(f"{name}: 1 added")
    assert [p for p in (tmp_path / "temp").rglob("*") if p.is_file()] == []


def test_an_upload_while_another_process_writes_is_refused_as_busy_and_the_page_goes_on(open_app, tmp_path, embeddings, fresh_assistant):
    data_dir = tmp_path / "index"
    Index(Settings(data_dir=data_dir), embeddings).ingest([HOSTILE])
    at = library(open_app(data_dir, PAPERCHAT_LOCK_TIMEOUT="0"))
    with writer_holding(data_dir) as pid:
        ingest_upload(at, "new.jsonl", b'{"id": "n1", "title": "New", "abstract": "A new abstract about graphs."}\n')
    [error] = uploads(at).error
    assert plain(error.value).startswith(f"index busy: another paperchat process (pid {pid}) is writing to {data_dir / 'chroma'}")
    assert "try again when it finishes" in plain(error.value)
    assert paper_count(at) == 1 and not uploads(at).success and at.text_input(key="library-query")
    ingest_upload(at, "new.jsonl", b'{"id": "n1", "title": "New", "abstract": "A new abstract about graphs."}\n')
    assert paper_count(at) == 2 and not uploads(at).error


def test_a_source_card_can_summarize_its_paper(open_app):
    at = ask(open_app(), ATTENTION)
    card = at.chat_message[1].expander[0]
    card.button[0].click().run()
    assert not at.exception
    summary = at.chat_message[3]
    assert summary.name == "assistant"
    assert source_labels(summary) == [card.label]
    assert "[1]" in answer_text(summary)


def follow_scripts(at: AppTest) -> list[str]:
    """The scripts that bring the latest question to the top of the view, on this run's page."""
    return [h.body for h in at.html if "<script" in h.body and h.proto.unsafe_allow_javascript]


def test_a_short_answer_has_its_evidence_after_it_and_a_long_one_beside_it(open_app):
    # One quote: beside it, an evidence panel as tall as the answer would leave it beside blank space.
    reply = ask(open_app(), ATTENTION).chat_message[1]
    assert not reply.columns, "the answer and its evidence take the full width, one after the other"
    assert source_labels(reply)[0].startswith("[1] MoH")
    # Eight papers: the evidence sits beside them, in a panel (the page's CSS bounds it to the
    # answer's height and scrolls it).
    reply = ask(open_app(), "List papers on optimization").chat_message[1]
    answer, evidence = reply.columns
    assert plain(answer_text(answer)).startswith("8 papers match:")
    assert len(source_labels(evidence)) == 8 and not source_labels(answer)


def test_a_new_answer_and_a_reload_bring_the_latest_question_into_view_and_other_reruns_do_not(open_app):
    at = open_app()
    assert not follow_scripts(at), "nothing to bring into view"
    ask(at, ATTENTION)
    [script] = follow_scripts(at)
    assert "scrollIntoView" in script and "stChatMessageAvatarUser" in script
    # A rerun of the reader's own (a filter changed) leaves the view where it is.
    at.sidebar.slider(key="filter-k").set_value(6).run()
    assert not follow_scripts(at)
    ask(at, "summarize the first one")
    assert len(follow_scripts(at)) == 1
    # A reload is a new session at the same URL.
    again = open_app(query={"c": at.query_params["c"]})
    assert len(again.chat_message) == 4 and len(follow_scripts(again)) == 1


def test_an_empty_index_says_how_to_add_papers_and_takes_no_question(open_app, tmp_path, fresh_assistant):
    at = open_app(tmp_path / "empty")
    assert at.chat_input[0].proto.disabled, "no question can be asked of no papers"
    shown = " ".join(plain(m.value) for m in [*at.caption, *at.info, *at.markdown])
    assert "no papers" not in shown
    assert "add papers to ask about them" in shown and "Library page" in shown and "paperchat ingest FILE" in shown
    next(b for b in at.button if b.label == "Index the bundled papers").click().run()
    assert not at.exception
    assert not at.chat_input[0].proto.disabled
    assert plain(at.caption[0].value).startswith("Ask about 20 ICML 2025 papers.")


def test_the_corpus_chip_and_the_caption_count_the_papers_the_filters_leave(open_app):
    at = open_app()
    at.sidebar.text_input(key="filter-author").set_value("Yuan").run()
    assert plain(at.caption[0].value).startswith("Ask about 1 of 20 ICML 2025 papers.")
    reply = ask(at, "What do these papers propose?").chat_message[1]
    chips = reply.markdown[0].value
    assert chips.startswith(":gray-badge[:material/library_books: 1 of 20 ICML 2025 papers]"), chips
    assert ":blue-badge[:material/filter_alt: author Yuan]" in chips
    # A filter stated in the question counts too.
    reply = ask(open_app(), "Which papers by Yuan are about attention?").chat_message[1]
    assert reply.markdown[0].value.startswith(":gray-badge[:material/library_books: 1 of 20 ICML 2025 papers]")


def test_the_app_speaks_chinese_when_set_and_a_chinese_question_is_answered_in_chinese(fresh_assistant, open_app):
    at = open_app(PAPERCHAT_LANG="zh")
    assert plain(at.caption[0].value).startswith("可就") and "每个论断都引用了它的论文" in plain(at.caption[0].value)
    assert at.chat_input[0].placeholder == "就这些论文提问"
    assert {"对话记录", "筛选"} <= {s.value for s in at.sidebar.subheader}
    at.chat_input[0].set_value("有没有让每个词只用一部分注意力头的工作？").run()
    assert not at.exception
    answer = at.chat_message[1]
    assert "最接近的是 MoH [1]" in " ".join(plain(i.value) for i in answer.info)
    # The quotes are the abstract's own English.
    assert "Mixture-of-Head attention" in " ".join(m.value for m in answer.markdown)


def page_words(at: AppTest) -> str:
    """Every string the page's elements carry (titles, texts, labels, help, placeholders,
    options), its tables' column names and cells, and what its progress bars and statuses said."""
    from google.protobuf import text_format

    words = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            words.append(text_format.MessageToString(proto, as_utf8=True))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at.main)
    walk(at.sidebar)
    words += [" ".join(map(str, frame.value.columns)) for frame in at.dataframe]
    # Their cells' text and columns' help: a table's data is Arrow bytes in its element and its
    # columns' settings JSON with \u escapes, their Chinese unreadable there.
    words += [" ".join(str(cell) for cell in frame.value.to_numpy().ravel()) for frame in at.dataframe]
    words += [json.dumps(json.loads(frame.proto.columns or "{}"), ensure_ascii=False) for frame in at.dataframe]
    return "\n".join(words)


def search_the_library(at: AppTest) -> None:
    at.text_input(key="library-query").input("mixture of attention heads").run()


def build_a_table(at: AppTest) -> None:
    at.text_input(key="table-query").input("Which papers say their code is available?")
    at.text_area(key="table-columns").input("Is the code released?\nsample size")
    at.button(key="table-build").click().run()


def choose_a_group(at: AppTest) -> None:
    at.selectbox(key="map_cluster").select_index(0).run()


def evaluate_three_questions(at: AppTest) -> None:
    next(n for n in at.number_input if n.label == "上限").set_value(3)
    next(b for b in at.button if b.label == "运行").click().run()


# Per page: what to do there, words it must show in Chinese, and English labels it must not.
CHINESE_PAGES = {
    "library.py": (
        search_the_library,
        ["文献库", "检索论文", "添加论文", "跳过无效记录", "20 篇论文", "与“mixture of attention heads”最相关的", "得分 "],
        ["Search the papers", "Add papers", "Skip invalid records", "best first", "score "],
    ),
    "table.py": (
        build_a_table,
        ["研究表格", "某个问题列出的论文", "生成表格", "篇论文 × 2 列", "添加一列", "在对话中提问"],
        ["Build the table", "Papers a question lists", "Add a column", "cells quote", "not in the abstract"],
    ),
    "map.py": (
        choose_a_group,
        ["文献地图", "20 篇论文，分为 6 个类别", "就这个类别提问", "以表格打开（", "最典型的在前"],
        ["Ask about this category", "Choose a category", "the most typical first", "Click a point"],
    ),
    "evaluate.py": (
        evaluate_three_questions,
        [
            "评测", "问题集", "每个回答的论文数（k）", "只评排序", "过往报告", "后端 extractive（摘录摘要原句）",
            # The verdicts, the metrics' names and what they measure, and a check's pass rule.
            "检索：良好（Recall@5 ", "引用：", "拒答：", "引用精确率", "金标论文中排在第 1 位的比例。",
            "回答引用的论文中金标论文所占比例。通过条件：引用的每篇论文都是金标论文。", "首字输出",
        ],
        [
            "Question set", "Ranking only", "Past reports", "Papers per answer", "quotes from the abstracts",
            "Retrieval: good", "Citations:", "Declines:", "Citation precision", "Share of the gold papers ranked first.",
            "A question passes when",
        ],
    ),
}


@pytest.mark.parametrize("page", list(CHINESE_PAGES))
def test_every_page_speaks_chinese_when_set(page, fresh_assistant, open_app, tmp_path):
    act, chinese, english = CHINESE_PAGES[page]
    at = open_app(PAPERCHAT_LANG="zh", PAPERCHAT_REPORTS_DIR=str(tmp_path / "reports"))
    at.switch_page(page).run()
    assert not at.exception
    act(at)
    assert not at.exception, at.exception
    shown = page_words(at)
    assert [words for words in chinese if words not in shown] == [], shown
    assert [words for words in english if words in shown] == [], shown
