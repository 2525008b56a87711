"""PaperChat's chat page (the app's default page; ui/app.py lists the pages).

Presentation only: questions go to `rag.Assistant`, answers come back as `Answer` records, and
the page is drawn from the stored Answers on every rerun. Text from the corpus goes through
`escape_markdown` wherever Streamlit would read Markdown (labels, captions, cards), so a title
reads as written and never as markup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import streamlit as st

from rag import Answer, Assistant, Filters, Index, Paper, PaperChatError, Source
from rag.answering.answerability import grade_label
from rag.answering.chain import DoneEvent, Event, SourcesEvent, StatusEvent, TokenEvent
from rag.answering.markers import citation_tips, link_citations
from rag.answering.research import answer_papers
from rag.corpus.reading import load_corpus
from rag.errors import BackendError
from rag.export import conversation_bibtex, conversation_markdown, scope_items, table_csv, table_markdown_text
from rag.markup import defuse_markdown, escape_markdown, highlighted, marked, to_markdown, to_plain
from rag.models.prompts import say
from rag.question.examples import example_questions
from rag.question.followup import with_choice
from rag.records import ComparisonTable, Grade, QuestionAnalysis, Relevance
from ui.common import (
    Request,
    SentRows,
    ask_next,
    backend_label,
    choose_filters,
    ingest_with_progress,
    load_assistant,
    open_table,
    placement,
    relevance_markdown,
    show_byline,
    show_error,
    t,
    title_markdown,
)
from ui.conversations import conversations_section, current_history, save_turn

# Cited papers whose cards open beside the answer; more are listed folded, so a long collection
# answer does not push its own evidence out of reach.
_OPEN_CARDS = 3
# An answer of fewer lines than this has its evidence after it, at full width: a panel beside it
# as tall as the answer would be too short to read a card in. A line is what the answer's column
# beside the evidence holds at 1400 px.
_BESIDE_LINES = 14
_LINE_CHARS = 75

# The page's own styles (a style-only st.html takes no room on the page).
_STYLE = """<style>
/* What the view is scrolled to sits below the page's top bar, not under it. */
[data-testid="stChatMessage"], [data-testid="stChatMessage"] details, [id^="evidence-"] { scroll-margin-top: 4.5rem; }
/* A comparison's cells are read from their first line. */
[data-testid="stChatMessage"] td { vertical-align: top; }
/* Beside the answer (side by side from 640 px), the evidence panel is as tall as the answer and
   scrolls within: the answer never sits beside blank space. */
@media (min-width: 640px) {
  [data-testid="stColumn"]:has([class*="st-key-evidence-beside-"]) { align-self: stretch; position: relative; }
  [data-testid="stColumn"]:has([class*="st-key-evidence-beside-"]) > [data-testid="stVerticalBlock"] {
    position: absolute; inset: 0; overflow-y: auto;
  }
}
</style>"""

# Run in the page once it is drawn: the latest question is brought to the top of the view, and,
# installed once per page, a click or tap on a [n] opens its evidence card, folded or not, and
# shows it. Streamlit keeps a chat page stuck to its foot (the end of the last evidence) while
# the page grows, and lets go at a scroll it did not make once the page has stopped moving: the
# question is brought up when the page has been still for a moment, again if it was pulled
# back, and never once the reader has scrolled or touched the page. When it has stayed there,
# <body data-question-shown> says how many questions the page holds.
_FOLLOW_SCRIPT = """<script data-shown='%(shown)s'>
(() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const latest = () => {
    const asked = document.querySelectorAll('[data-testid="stChatMessageAvatarUser"]');
    const question = asked[asked.length - 1]?.closest('[data-testid="stChatMessage"]');
    if (!question) return;
    const page = document.querySelector('[data-testid="stAppScrollToBottomContainer"]') || document.scrollingElement;
    // Room below a short last answer, so its question can reach the top of the view at all.
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    if (main) {
      main.style.paddingBottom = "";
      const offset = question.getBoundingClientRect().top - page.getBoundingClientRect().top + page.scrollTop;
      const short = page.clientHeight - (page.scrollHeight - offset);
      if (short > 0) main.style.paddingBottom = `calc(${getComputedStyle(main).paddingBottom} + ${short}px)`;
    }
    const start = performance.now();
    let still = start, seen = "", nudged = false, placed = null, over = false;
    const stop = () => { over = true; };
    const events = ["wheel", "touchstart", "keydown", "pointerdown"];
    events.forEach((name) => window.addEventListener(name, stop, {capture: true, passive: true}));
    const watch = () => {
      const now = performance.now(), state = `${page.scrollTop} ${page.scrollHeight}`;
      if (state !== seen) [seen, still] = [state, now];
      else if (now - still > 150) {
        still = now;
        if (placed !== null && Math.abs(question.getBoundingClientRect().top - placed) <= 2) {
          over = true;
          document.body.dataset.questionShown = String(asked.length);  // for whoever waits on it
        } else if (!nudged) {
          // A step of a pixel first, at which Streamlit measures the page afresh: the scroll
          // after it is then one it lets go at, and the page does not jump back to its foot.
          page.scrollBy(0, -1);
          nudged = true;
        } else {
          question.scrollIntoView({block: "start"});
          placed = question.getBoundingClientRect().top;
        }
      }
      if (!over && now - start < 10000) requestAnimationFrame(watch);
      else events.forEach((name) => window.removeEventListener(name, stop, {capture: true}));
    };
    watch();
  };
  const drawn = () => %(at_once)s || app.dataset.testScriptState === "notRunning";
  if (drawn()) latest();
  else {
    const watch = new MutationObserver(() => { if (drawn()) { watch.disconnect(); latest(); } });
    watch.observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
  }
  if (window.paperchatCitations) return;
  window.paperchatCitations = true;
  document.addEventListener("click", (event) => {
    const link = event.target.closest?.('a[href^="#evidence-"]');
    const anchor = link && document.getElementById(link.getAttribute("href").slice(1));
    const card = anchor?.closest('[data-testid="stElementContainer"]')?.nextElementSibling?.querySelector("details");
    if (!card) return;
    event.preventDefault();
    if (!card.open) card.querySelector("summary").click();
    history.replaceState(history.state, "", link.getAttribute("href"));
    requestAnimationFrame(() => {
      // Beside the answer, only the evidence panel scrolls (the card to its top, or to the top
      // of the view below the page's bar), and the answer stays where it is read.
      const panel = card.closest('[data-testid="stColumn"]:has([class*="st-key-evidence-beside-"]) > div');
      if (panel && panel.scrollHeight > panel.clientHeight) {
        const top = Math.max(panel.getBoundingClientRect().top, 72);
        panel.scrollBy({top: card.getBoundingClientRect().top - top});
      } else card.scrollIntoView({block: "start"});
      card.animate([{boxShadow: "0 0 0 3px rgba(255, 75, 75, 0.6)"}, {boxShadow: "none"}], {duration: 1600});
    });
  }, true);
})();
</script>"""


class AnswerStream:
    """The token texts of an answer's events, for st.write_stream; keeps the final Answer. Until
    the first token, `waiting` says whom the answer waits for, and why if a model failed."""

    def __init__(self, events: Iterator[Event], waiting=None) -> None:
        self.events = events
        self.waiting = waiting
        self.answer: Answer | None = None

    def tokens(self) -> Iterator[str]:
        for event in self.events:
            if isinstance(event, StatusEvent) and self.waiting is not None:
                self.waiting.caption(escape_markdown(event.text))
            elif isinstance(event, TokenEvent):
                if self.waiting is not None:
                    self.waiting.empty()
                    self.waiting = None
                yield event.text
            elif isinstance(event, DoneEvent):
                self.answer = event.answer


# --- sidebar ----------------------------------------------------------------------------------


def sidebar(assistant: Assistant, history: Sequence[Answer]) -> tuple[Filters, int]:
    """Filters, exports, and what a developer wants to know of the index; returns the filters
    and k to ask with."""
    stats = assistant.index.stats()
    with st.sidebar:
        conversations_section(assistant.settings)
        filters, k = choose_filters(stats, assistant.settings.k)
        if history:
            export(history)
        with st.expander(t("sidebar.about")):
            papers, chunks, categories = st.columns(3)
            papers.metric(t("sidebar.papers"), stats.papers)
            chunks.metric(t("sidebar.chunks"), stats.chunks)
            categories.metric(t("sidebar.categories"), len(stats.categories))
            st.caption(t("sidebar.embeddings", model=escape_markdown(stats.embedding_model)))
            st.caption(t("sidebar.stored", location=escape_markdown(stats.location)))
            st.markdown(
                t("sidebar.answers_by", label=escape_markdown(backend_label(assistant.backend.name, assistant.backend.model)))
            )
            st.caption(escape_markdown(assistant.backend.reason))
    return filters, k


def export(history: Sequence[Answer]) -> None:
    st.subheader(t("sidebar.export"))
    exported = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    st.download_button(
        t("sidebar.export_markdown"),
        conversation_markdown(history, exported=exported),
        file_name="paperchat.md",
        mime="text/markdown",
    )
    cited = conversation_bibtex(history, exported=exported)
    st.download_button(
        t("sidebar.export_bibtex"), cited, file_name="paperchat.bib", mime="application/x-bibtex", disabled=not cited
    )


# --- answers ----------------------------------------------------------------------------------


def render_turn(answer: Answer, turn: int) -> None:
    """One stored question and its answer, from the final (citation-checked) record: the scope
    it was asked in, the answer, and its evidence: beside a long answer, in a panel as tall as
    the answer that scrolls; after a short answer or a table, at full width."""
    with st.chat_message("user"):
        st.markdown(escape_markdown(answer.question))
    with st.chat_message("assistant"):
        render_scope(answer)
        render_searched_for(answer.question, answer.standalone_question, answer.analysis, rewritten=False)
        if not evidence_beside(answer):
            render_answer(answer, turn)
            render_evidence(answer, turn)
            return
        text, evidence = st.columns([3, 2], gap="medium")
        with text:
            render_answer(answer, turn)
        with evidence, st.container(key=f"evidence-beside-{turn}"):
            render_evidence(answer, turn)


def evidence_beside(answer: Answer) -> bool:
    """Whether the answer is long enough for its evidence to sit beside it (see _BESIDE_LINES);
    a table needs the full width."""
    if answer.table is not None or not answer.cited_sources:
        return False
    lines = to_plain(answer.text).splitlines()
    return sum(math.ceil(len(line) / _LINE_CHARS) for line in lines) >= _BESIDE_LINES


def render_scope(answer: Answer) -> None:
    """The turn's chips: the corpus, each filter, the backend, and the rewritten question when it
    differs from the one typed; the date as their tooltip."""
    chips = []
    if answer.corpus:
        chips.append(f":gray-badge[:material/library_books: {escape_markdown(answer.corpus)}]")
    chips += [f":blue-badge[:material/filter_alt: {escape_markdown(part)}]" for part in answer.filters.parts]
    if answer.answered_by:
        chips.append(f":violet-badge[:material/smart_toy: {escape_markdown(answer.answered_by)}]")
    if answer.standalone_question != answer.question:
        chips.append(
            f":orange-badge[:material/edit: {t('chat.searched_chip', question=escape_markdown(answer.standalone_question))}]"
        )
    if chips:
        st.markdown(" ".join(chips), help=escape_markdown(" · ".join(scope_items(answer))))


def render_searched_for(question: str, standalone: str, analysis: QuestionAnalysis | None, *, rewritten: bool = True) -> None:
    """How the question was read (type, key terms, the filters it states), and while answering
    the rewritten follow-up (a stored turn has it as a chip)."""
    parts = []
    if rewritten and standalone != question:
        parts.append(standalone)
    if analysis is not None:
        parts.append(analysis.summary_line)
    if parts:
        st.caption(t("chat.searched_for", what=escape_markdown(" · ".join(parts))))


def anchor(turn: int, number: int) -> str:
    return f"evidence-{turn}-{number}"


GRADE_COLORS = {Grade.ANSWERS: "green", Grade.BEST_MATCH: "orange", Grade.NOT_FOUND: "red"}


def render_answer(answer: Answer, turn: int) -> None:
    # Answer text is Markdown written by our backends (bold titles, [n] markers, a table); each
    # [n] becomes a link to its evidence card whose hover shows the title and supporting sentence.
    links = {n: (f"#{anchor(turn, n)}", tip) for n, tip in citation_tips(answer).items()}
    if answer.grade is not None:
        # The grade is the answer's own word: in its question's language, as its note is.
        st.badge(
            say(f"grade.{answer.grade.name.lower()}", answer.language),
            color=GRADE_COLORS[answer.grade],
            help=grade_label(answer.grade, answer.language),
        )
    if answer.note:
        # What no abstract holds comes first: the quotes after it are what they do say.
        st.info(escape_markdown(answer.note), icon=":material/info:")
    st.markdown(link_citations(answer.text, links))
    render_choices(answer, turn)
    if answer.invalid_citations:
        numbers = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        st.warning(t("chat.invalid", numbers=numbers))
    if answer.unsupported:
        numbers = ", ".join(dict.fromkeys(f"[{c.number}]" for c in answer.unsupported))
        st.warning(t("chat.unsupported", numbers=numbers))
    if answer.covered and answer.uncited:
        st.warning(t("chat.uncited"))
    if answer.cut_off:
        st.error(t("chat.cut_off", reason=escape_markdown(answer.cut_off)), icon=":material/content_cut:")
        offer_offline(Request(answer.question, offline=True), key=f"offline-{turn}")
    if answer.table is not None:
        render_table_downloads(answer.table, turn)
    if answer.form in ("collection", "comparison"):
        offer_table(answer, turn)


def offer_table(answer: Answer, turn: int) -> None:
    ids = answer_papers(answer)
    if ids and st.button(
        t("chat.open_table"),
        key=f"open-table-{turn}",
        icon=":material/table:",
        help=t("chat.open_table_help"),
    ):
        open_table(SentRows(t("chat.table_source", question=answer.question), tuple(ids)))


def offer_offline(request: Request, *, key: str) -> None:
    st.button(t("chat.offline"), key=key, icon=":material/format_quote:", on_click=ask_next, args=(request,))


def render_choices(answer: Answer, turn: int) -> None:
    """A clarification's papers, a button each that asks the question again about that paper."""
    for choice in answer.choices:
        request = Request(with_choice(answer, choice))
        label = escape_markdown(choice.paper.display_title)
        st.button(label, key=f"choice-{turn}-{choice.number}", icon=":material/article:", on_click=ask_next, args=(request,))


def render_table_downloads(table: ComparisonTable, turn: int) -> None:
    with st.container(horizontal=True, vertical_alignment="center"):
        st.caption(t("chat.download_table"), width="content")
        st.download_button(
            "CSV",
            table_csv(table),
            file_name="comparison.csv",
            mime="text/csv",
            key=f"table-csv-{turn}",
            icon=":material/download:",
        )
        st.download_button(
            "Markdown",
            table_markdown_text(table),
            file_name="comparison.md",
            mime="text/markdown",
            key=f"table-md-{turn}",
            icon=":material/download:",
        )


def render_evidence(answer: Answer, turn: int) -> None:
    """An answer's evidence: a card per cited paper (its supporting sentences
    highlighted in its abstract, how it meets the question), a collection's further matches, the
    closest papers of a decline, then the papers retrieved but not cited, weak ones greyed."""
    cited = {s.number for s in answer.cited_sources}
    if cited:
        st.markdown(f"**{t('chat.evidence')}**")
    for i, source in enumerate(answer.cited_sources):
        citations = [c for c in answer.citations if c.number == source.number and c.support]
        supports = dict.fromkeys(c.support for c in citations if c.supported)
        unsupported = dict.fromkeys(c.citing_sentence for c in citations if not c.supported)
        # An anchor for the answer's [n] links, outside the card so a folded card is reached too.
        st.markdown(f'<div id="{anchor(turn, source.number)}"></div>', unsafe_allow_html=True)
        with st.expander(f"[{source.number}] {title_markdown(source.paper)}", expanded=i < _OPEN_CARDS):
            render_paper(
                source.paper,
                list(supports),
                key=f"summarize-{turn}-{source.number}",
                unsupported=list(unsupported),
                relevance=answer.relevance_of(source.paper.id),
            )
    matched = {m.number: m for m in answer.matches}
    more = [s for s in answer.sources if s.number in matched and s.number not in cited]
    if more:
        with st.expander(t("chat.all_matching", n=len(matched), more=len(more))):
            for source in [s for s in answer.sources if s.number in matched]:
                st.markdown(f"[{source.number}] **{title_markdown(source.paper)}**")
                st.caption(to_markdown(matched[source.number].sentence))
    if answer.closest:
        with st.expander(t("chat.closest", n=len(answer.closest)), expanded=True):
            render_paper_list(answer, answer.closest)
    others = [s for s in answer.sources if s.number not in cited and s.number not in matched]
    if others and answer.form != "summary":
        with st.expander(t("chat.retrieved", n=len(others))):
            render_paper_list(answer, others)


def render_paper_list(answer: Answer, sources: Sequence[Source]) -> None:
    for source in sources:
        relevance = answer.relevance_of(source.paper.id)
        title = title_markdown(source.paper)
        # A weak hit's title is greyed: the reader sees at a glance which papers to discount.
        st.markdown(f"[{source.number}] :gray[{title}]" if relevance and relevance.weak else f"[{source.number}] {title}")
        byline = " — ".join(x for x in (source.paper.author_line, placement(source.paper)) if x)
        st.caption(escape_markdown(byline))
        if relevance is not None:
            st.caption(relevance_markdown(relevance))


def render_paper(
    paper: Paper, supports: Sequence[str], *, key: str, unsupported: Sequence[str] = (), relevance: Relevance | None = None
) -> None:
    show_byline(paper)
    if relevance is not None:
        st.caption(relevance_markdown(relevance))
    for claim in unsupported:
        st.error(t("chat.not_supported", claim=escape_markdown(claim)), icon=":material/block:")
    abstract, elsewhere = highlighted(paper.abstract, supports)
    # A support found outside the abstract (its title) is shown on its own, highlighted as well.
    for sentence in elsewhere:
        st.markdown(marked(sentence))
    st.markdown(abstract)
    buttons = st.container(horizontal=True)
    summary = Request(f"Summarize “{paper.display_title}”", summary_of=paper.id)
    buttons.button(t("chat.summarize"), key=key, on_click=ask_next, args=(summary,), icon=":material/summarize:")
    if paper.url.startswith(("https://", "http://")):
        buttons.link_button(t("chat.open_paper"), paper.url, icon=":material/open_in_new:")
    elif paper.url:
        st.caption(escape_markdown(paper.url))


def show_stream(stream: AnswerStream, *, defuse: bool) -> None:
    """The answer as it comes; a model's Markdown defused at every step, as its stored text will
    be, so no image a source slipped into it is fetched even for a moment."""
    if not defuse:
        st.write_stream(stream.tokens())
        return
    box = st.empty()
    text = ""
    for piece in stream.tokens():
        text += piece
        box.markdown(defuse_markdown(text))


def answer_live(assistant: Assistant, request: Request, history: Sequence[Answer], filters: Filters, k: int) -> Answer | None:
    """Ask, streaming the answer into the chat; None (and an error shown) if it failed."""
    with st.chat_message("user"):
        st.markdown(escape_markdown(request.text))
        follow_asked_question(history)
    with st.chat_message("assistant"):
        try:
            if request.summary_of:
                events = assistant.stream_summary(request.summary_of)
            else:
                events = assistant.stream(request.text, history=history, filters=filters, k=k)
            with st.spinner(t("chat.searching")):
                sources: SourcesEvent = next(events)  # rag.answering.chain's streams open with the sources
            render_searched_for(request.text, sources.standalone_question, sources.analysis)
            # At full width: where its evidence goes is known once the answer is whole.
            waiting = None
            if sources.note:
                # What no abstract holds comes first: the quotes after it are what they do say.
                st.info(escape_markdown(sources.note), icon=":material/info:")
            if sources.sources and assistant.backend.chat_model is not None:
                waiting = st.empty()
                waiting.caption(t("chat.waiting", who=escape_markdown(assistant.backend.who)))
            stream = AnswerStream(events, waiting)
            show_stream(stream, defuse=assistant.backend.chat_model is not None)
        except PaperChatError as error:
            show_error(error)
            if isinstance(error, BackendError):  # the model failed: the abstracts can still answer
                offer_offline(Request(request.text, request.summary_of, offline=True), key="offline-failed")
            return None
    return stream.answer


# --- first screen -----------------------------------------------------------------------------


def examples(index: Index) -> list[Request]:
    """Three questions this corpus answers (rag.question.examples), as requests."""
    stats = index.stats()
    # Summaries are offered from the first 2,000 papers: reading every title of a large library
    # would hold the page up.
    asks = example_questions(stats.categories, index.profile().names, index.sample(2000).values())
    return [Request(a.text, summary_of=a.paper_id) for a in asks]


def render_first_screen(assistant: Assistant) -> None:
    """Examples to try; with an empty index, a button that indexes the bundled papers."""
    asks = examples(assistant.index)
    if not asks:
        bundled = assistant.settings.bundled_corpus
        st.info(
            t("chat.empty_index", location=escape_markdown(assistant.index.location)),
            icon=":material/inventory_2:",
        )
        if bundled.is_file() and st.button(t("chat.index_bundled"), type="primary", icon=":material/download:"):
            try:
                loaded = load_corpus(bundled)
            except PaperChatError as error:
                show_error(error)
                return
            if ingest_with_progress(assistant.index, loaded) is not None:
                st.rerun()
        st.caption(t("chat.or_add"))
        return
    st.markdown(t("chat.try"))
    for i, ask in enumerate(asks):
        st.button(escape_markdown(ask.text), key=f"example-{i}", on_click=ask_next, args=(ask,), icon=":material/arrow_forward:")


# --- page -------------------------------------------------------------------------------------


def follow_latest_question(history: Sequence[Answer]) -> None:
    """After a new answer, a reload or another conversation opened (not after any other rerun,
    which leaves the view where the reader put it): the latest question at the top of the view."""
    shown = [st.session_state.get("conversation"), len(history)]
    if not history or st.session_state.get("followed") == shown:
        return
    st.session_state.followed = shown
    st.html(_FOLLOW_SCRIPT % {"shown": json.dumps(shown), "at_once": "false"}, unsafe_allow_javascript=True)


def follow_asked_question(history: Sequence[Answer]) -> None:
    """The question just asked at the top of the view while its answer is written under it, so
    the reader watches it come; when the page is drawn again, follow_latest_question keeps it
    there (it had waited for that redraw, seconds on a busy machine, and then jumped)."""
    shown = [st.session_state.get("conversation"), len(history) + 1, "asked"]
    st.html(_FOLLOW_SCRIPT % {"shown": json.dumps(shown), "at_once": "true"}, unsafe_allow_javascript=True)


def chat() -> None:
    st.title("PaperChat")
    st.html(_STYLE)
    # Drawn before the index and the model load, so the box is there to type into at once; an
    # empty index (as the last run found it) takes no question.
    empty = st.session_state.get("index-empty", False)
    typed = st.chat_input(t("chat.add_first") if empty else t("chat.ask"), disabled=empty)
    try:
        assistant = load_assistant()
        history = current_history(assistant.settings)
        # Another process or a teammate on the shared server may have ingested since the last rerun.
        assistant.index.refresh()
        if (assistant.index.stats().papers == 0) != empty:
            st.session_state["index-empty"] = not empty
            st.rerun()
        filters, k = sidebar(assistant, history)
    except PaperChatError as error:  # no index, or a shared server that went away
        show_error(error)
        st.stop()
    if not empty:
        st.caption(t("chat.scope", scope=escape_markdown(assistant.index.scope_summary(filters))))
    for turn, answer in enumerate(history):
        render_turn(answer, turn)

    request = st.session_state.pop("pending", None) or (Request(typed) if typed else None)
    if request is None:
        if not history:
            render_first_screen(assistant)
        follow_latest_question(history)
        return
    answer = answer_live(assistant.offline() if request.offline else assistant, request, history, filters, k)
    if answer is not None:
        history.append(answer)
        save_turn(assistant.settings, answer)
        # Redraw from the stored Answer: its checked text, evidence and the exports.
        st.rerun()


chat()
