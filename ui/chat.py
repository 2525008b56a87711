"""PaperChat's chat page (the app's default page; ui/app.py lists the pages).

Presentation only: questions go to `rag.Assistant`, answers come back as `Answer` records, and
the page is drawn from the stored Answers on every rerun. Text from the corpus goes through
`escape_markdown` wherever Streamlit would read Markdown (labels, captions, cards), so a title
reads as written and never as markup.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import streamlit as st

from rag import Answer, Assistant, Filters, Index, Paper, PaperChatError, Source
from rag.answering.followup import with_choice
from rag.chain import DoneEvent, Event, SourcesEvent, StatusEvent, TokenEvent
from rag.citations import citation_tips, link_citations
from rag.corpus import load_corpus
from rag.errors import BackendError
from rag.examples import example_questions
from rag.export import conversation_bibtex, conversation_markdown, scope_items, table_csv, table_markdown_text
from rag.markup import defuse_markdown, escape_markdown, highlighted, marked, to_markdown
from rag.records import ComparisonTable, QuestionAnalysis, Relevance
from ui.common import (
    Request,
    ask_next,
    choose_filters,
    ingest_with_progress,
    load_assistant,
    placement,
    relevance_markdown,
    show_byline,
    show_error,
    title_markdown,
)
from ui.conversations import conversations_section, current_history, save_turn

# Cited papers whose cards open beside the answer; more are listed folded, so a long collection
# answer does not push its own evidence out of reach.
_OPEN_CARDS = 3
_PANEL_HEIGHT = 720


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
        with st.expander("About this index"):
            papers, chunks, categories = st.columns(3)
            papers.metric("Papers", stats.papers)
            chunks.metric("Chunks", stats.chunks)
            categories.metric("Categories", len(stats.categories))
            st.caption(f"Embeddings: {escape_markdown(stats.embedding_model)}")
            st.caption(f"Stored at: {escape_markdown(stats.location)}")
            st.markdown(f"**Answers by** {escape_markdown(assistant.backend.label)}")
            st.caption(escape_markdown(assistant.backend.reason))
    return filters, k


def export(history: Sequence[Answer]) -> None:
    st.subheader("Export")
    exported = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    st.download_button(
        "Conversation (Markdown)", conversation_markdown(history, exported=exported), file_name="paperchat.md", mime="text/markdown"
    )
    cited = conversation_bibtex(history, exported=exported)
    st.download_button(
        "Cited papers (BibTeX)", cited, file_name="paperchat.bib", mime="application/x-bibtex", disabled=not cited
    )


# --- answers ----------------------------------------------------------------------------------


def render_turn(answer: Answer, turn: int) -> None:
    """One stored question and its answer, from the final (citation-checked) record: the scope
    it was asked in, the answer, and beside it the evidence."""
    with st.chat_message("user"):
        st.markdown(escape_markdown(answer.question))
    with st.chat_message("assistant"):
        render_scope(answer)
        render_searched_for(answer.question, answer.standalone_question, answer.analysis, rewritten=False)
        text, evidence = st.columns([3, 2], gap="medium")
        with text:
            render_answer(answer, turn)
        # Several cited papers scroll in a panel of their own, beside the answer they support.
        with evidence, st.container(height=_PANEL_HEIGHT if len(answer.cited_sources) > 1 else "content"):
            render_evidence(answer, turn)


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
        chips.append(f":orange-badge[:material/edit: searched for “{escape_markdown(answer.standalone_question)}”]")
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
        st.caption("Searched for: " + escape_markdown(" · ".join(parts)))


def anchor(turn: int, number: int) -> str:
    return f"evidence-{turn}-{number}"


def render_answer(answer: Answer, turn: int) -> None:
    # Answer text is Markdown written by our backends (bold titles, [n] markers, a table); each
    # [n] becomes a link to its evidence card whose hover shows the title and supporting sentence.
    links = {n: (f"#{anchor(turn, n)}", tip) for n, tip in citation_tips(answer).items()}
    if answer.note:
        # What no abstract holds comes first: the quotes after it are what they do say.
        st.info(escape_markdown(answer.note), icon=":material/info:")
    st.markdown(link_citations(answer.text, links))
    render_choices(answer, turn)
    if answer.invalid_citations:
        numbers = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        st.warning(f"Held back citations to sources that were not retrieved: {numbers}")
    if answer.unsupported:
        numbers = ", ".join(dict.fromkeys(f"[{c.number}]" for c in answer.unsupported))
        st.warning(f"Citations marked *(unsupported)* name a paper whose abstract does not support the claim: {numbers}")
    if answer.covered and answer.uncited:
        st.warning("This answer cites no source: treat it as unsupported.")
    if answer.cut_off:
        st.error(f"Answer cut off: {escape_markdown(answer.cut_off)}", icon=":material/content_cut:")
        offer_offline(Request(answer.question, offline=True), key=f"offline-{turn}")
    if answer.table is not None:
        render_table_downloads(answer.table, turn)


def offer_offline(request: Request, *, key: str) -> None:
    st.button("Answer from the abstracts instead", key=key, icon=":material/format_quote:", on_click=ask_next, args=(request,))


def render_choices(answer: Answer, turn: int) -> None:
    """A clarification's papers, a button each that asks the question again about that paper."""
    for choice in answer.choices:
        request = Request(with_choice(answer, choice))
        label = escape_markdown(choice.paper.display_title)
        st.button(label, key=f"choice-{turn}-{choice.number}", icon=":material/article:", on_click=ask_next, args=(request,))


def render_table_downloads(table: ComparisonTable, turn: int) -> None:
    left, right, _ = st.columns([1, 1, 3])
    left.download_button(
        "Table (CSV)", table_csv(table), file_name="comparison.csv", mime="text/csv",
        key=f"table-csv-{turn}", icon=":material/download:",
    )
    right.download_button(
        "Table (Markdown)", table_markdown_text(table), file_name="comparison.md", mime="text/markdown",
        key=f"table-md-{turn}", icon=":material/download:",
    )


def render_evidence(answer: Answer, turn: int) -> None:
    """The evidence beside the answer: a card per cited paper (its supporting sentences
    highlighted in its abstract, how it meets the question), a collection's further matches, the
    closest papers of a decline, then the papers retrieved but not cited, weak ones greyed."""
    cited = {s.number for s in answer.cited_sources}
    if cited:
        st.markdown("**Evidence**")
    for i, source in enumerate(answer.cited_sources):
        citations = [c for c in answer.citations if c.number == source.number and c.support]
        supports = dict.fromkeys(c.support for c in citations if c.supported)
        unsupported = dict.fromkeys(c.citing_sentence for c in citations if not c.supported)
        # An anchor for the answer's [n] links, outside the card so a folded card is reached too.
        st.markdown(f'<div id="{anchor(turn, source.number)}"></div>', unsafe_allow_html=True)
        with st.expander(f"[{source.number}] {title_markdown(source.paper)}", expanded=i < _OPEN_CARDS):
            render_paper(
                source.paper, list(supports), key=f"summarize-{turn}-{source.number}", unsupported=list(unsupported),
                relevance=answer.relevance_of(source.paper.id),
            )
    matched = {m.number: m for m in answer.matches}
    more = [s for s in answer.sources if s.number in matched and s.number not in cited]
    if more:
        with st.expander(f"All {len(matched)} matching papers ({len(more)} more than shown)"):
            for source in [s for s in answer.sources if s.number in matched]:
                st.markdown(f"[{source.number}] **{title_markdown(source.paper)}**")
                st.caption(to_markdown(matched[source.number].sentence))
    if answer.closest:
        with st.expander(f"Closest papers: they do not answer this ({len(answer.closest)})", expanded=True):
            render_paper_list(answer, answer.closest)
    others = [s for s in answer.sources if s.number not in cited and s.number not in matched]
    if others and answer.form != "summary":
        with st.expander(f"Retrieved but not cited ({len(others)})"):
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
        st.error(f"This paper's abstract does not support the claim “{escape_markdown(claim)}”.", icon=":material/block:")
    abstract, elsewhere = highlighted(paper.abstract, supports)
    # A support found outside the abstract (its title) is shown on its own, highlighted as well.
    for sentence in elsewhere:
        st.markdown(marked(sentence))
    st.markdown(abstract)
    buttons = st.columns(2)
    summary = Request(f"Summarize “{paper.display_title}”", summary_of=paper.id)
    buttons[0].button("Summarize", key=key, on_click=ask_next, args=(summary,), icon=":material/summarize:")
    if paper.url.startswith(("https://", "http://")):
        buttons[1].link_button("Open the paper", paper.url, icon=":material/open_in_new:")
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


def answer_live(
    assistant: Assistant, request: Request, history: Sequence[Answer], filters: Filters, k: int
) -> Answer | None:
    """Ask, streaming the answer into the chat; None (and an error shown) if it failed."""
    with st.chat_message("user"):
        st.markdown(escape_markdown(request.text))
    with st.chat_message("assistant"):
        try:
            if request.summary_of:
                events = assistant.stream_summary(request.summary_of)
            else:
                events = assistant.stream(request.text, history=history, filters=filters, k=k)
            with st.spinner("Searching the papers…"):
                sources: SourcesEvent = next(events)  # rag.chain's streams open with the sources
            render_searched_for(request.text, sources.standalone_question, sources.analysis)
            text, _ = st.columns([3, 2], gap="medium")
            waiting = None
            with text:
                if sources.note:
                    # What no abstract holds comes first: the quotes after it are what they do say.
                    st.info(escape_markdown(sources.note), icon=":material/info:")
                if sources.sources and assistant.backend.chat_model is not None:
                    waiting = st.empty()
                    waiting.caption(f"Waiting for {escape_markdown(assistant.backend.who)}…")
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
    """Three questions this corpus answers (rag.examples), as requests."""
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
        st.info(f"The index at {escape_markdown(assistant.index.location)} is empty.", icon=":material/inventory_2:")
        if bundled.is_file() and st.button("Index the bundled papers", type="primary", icon=":material/download:"):
            try:
                loaded = load_corpus(bundled)
            except PaperChatError as error:
                show_error(error)
                return
            if ingest_with_progress(assistant.index, loaded) is not None:
                st.rerun()
        st.caption("Or add your own on the Library page, or with `paperchat ingest FILE`.")
        return
    st.markdown("Try one of these:")
    for i, ask in enumerate(asks):
        st.button(escape_markdown(ask.text), key=f"example-{i}", on_click=ask_next, args=(ask,), icon=":material/arrow_forward:")


# --- page -------------------------------------------------------------------------------------


def chat() -> None:
    st.title("PaperChat")
    # Drawn before the index and the model load, so the box is there to type into at once.
    typed = st.chat_input("Ask about the papers")
    try:
        assistant = load_assistant()
        history = current_history(assistant.settings)
        # Another process or a teammate on the shared server may have ingested since the last rerun.
        assistant.index.refresh()
        filters, k = sidebar(assistant, history)
    except PaperChatError as error:  # no index, or a shared server that went away
        show_error(error)
        st.stop()
    st.caption(
        f"Ask about {escape_markdown(assistant.index.stats().summary)}. Every claim cites its paper: "
        "hover over a [n] to see the sentence it rests on, click it to see the abstract."
    )
    for turn, answer in enumerate(history):
        render_turn(answer, turn)

    request = st.session_state.pop("pending", None) or (Request(typed) if typed else None)
    if request is None:
        if not history:
            render_first_screen(assistant)
        return
    answer = answer_live(assistant.offline() if request.offline else assistant, request, history, filters, k)
    if answer is not None:
        history.append(answer)
        save_turn(assistant.settings, answer)
        # Redraw from the stored Answer: its checked text, evidence and the exports.
        st.rerun()


chat()
