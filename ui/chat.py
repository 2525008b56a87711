"""PaperChat's chat page (the app's default page; ui/app.py lists the pages).

Presentation only: questions go to `rag.Assistant`, answers come back as `Answer` records, and
the page is drawn from the stored Answers on every rerun. Text from the corpus goes through
`escape_markdown` wherever Streamlit would read Markdown (labels, captions, cards), so a title
reads as written and never as markup.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import streamlit as st

from rag import Answer, Assistant, Filters, Index, Paper, PaperChatError, Source
from rag.chain import DoneEvent, Event, SourcesEvent, StatusEvent, TokenEvent
from rag.corpus import load_upload
from rag.errors import BackendError
from rag.export import bibtex, conversation_markdown, table_csv, table_markdown_text, venue_year
from rag.markup import defuse_markdown, escape_markdown, to_markdown
from rag.records import ComparisonTable, QuestionAnalysis
from ui.common import Request, ask_next, load_assistant, show_error
from ui.conversations import conversations_section, current_history, save_turn

ALL = "All"
MAX_K = 20


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
    """Corpus stats, backend, filters and exports; returns the filters and k to ask with."""
    # Another process or a teammate on the shared server may have ingested since the last rerun.
    assistant.index.refresh()
    stats = assistant.index.stats()
    with st.sidebar:
        st.title("PaperChat")
        papers, chunks, categories = st.columns(3)
        papers.metric("Papers", stats.papers)
        chunks.metric("Chunks", stats.chunks)
        categories.metric("Categories", len(stats.categories))
        st.caption(f"Embeddings: {escape_markdown(stats.embedding_model)}")
        conversations_section(assistant.settings)

        st.subheader("Backend")
        st.markdown(escape_markdown(assistant.backend.label))
        st.caption(escape_markdown(assistant.backend.reason))

        st.subheader("Filters")
        category = st.selectbox(
            "Category",
            [ALL, *stats.categories],
            format_func=lambda c: c if c == ALL else f"{c} ({stats.categories[c]})",
        )
        venue = st.selectbox("Venue", [ALL, *stats.venues]) if stats.venues else ALL
        first, last = min(stats.years, default=None), max(stats.years, default=None)
        # A slider needs two distinct ends; with one year there is nothing to filter by.
        low, high = st.slider("Years", first, last, (first, last)) if first != last else (first, last)
        author = st.text_input("Author", placeholder="a name, or a word of one")
        k = st.slider("Papers to retrieve", 1, MAX_K, min(assistant.settings.k, MAX_K))

        upload(assistant.index)
        if history:
            export(history)
    filters = Filters(
        category=None if category == ALL else category,
        venue=None if venue == ALL else venue,
        author=author.strip() or None,
        # The slider's full range means "any year", which includes papers with no year.
        year_min=low if low != first else None,
        year_max=high if high != last else None,
    )
    return filters, k


def upload(index: Index) -> None:
    """Add a corpus file; a bad one shows its error (file:line) and changes nothing."""
    st.subheader("Add papers")
    limits = index.settings.limits
    file = st.file_uploader(
        "Corpus file", type=["txt", "jsonl", "gz", "csv", "bib"],
        help="A listing .txt, .jsonl or .jsonl.gz (also BEIR corpus.jsonl), .csv with a header, or .bib with abstracts",
        # The browser refuses a larger file before sending it; Streamlit's server refuses above
        # its own server.maxUploadSize whatever this says, so the smaller is the true limit.
        max_upload_size=min(limits.max_upload_mb, st.get_option("server.maxUploadSize")),
    )
    skip_invalid = st.checkbox("Skip invalid records", help="Load the valid records and list the others")
    if file is not None and st.button("Ingest", type="primary"):
        try:
            loaded = load_upload(file.name, file.getvalue(), skip_invalid=skip_invalid, limits=limits)
        except PaperChatError as error:
            show_error(error)
            return
        bar = st.progress(0.0, text="Indexing…")
        try:
            report = index.ingest(
                loaded, progress=lambda done, total: bar.progress(done / total if total else 1.0, text=f"Indexing {done}/{total}"),
                waiting=lambda text: bar.progress(0.0, text=escape_markdown(text)),
            )
        except PaperChatError as error:  # another process kept the index busy past the wait
            bar.empty()
            show_error(error)
            return
        st.session_state.ingested = (file.name, report)
        # The stats, filters and examples above were drawn before this ingest.
        st.rerun()
    if "ingested" in st.session_state:
        name, report = st.session_state.ingested
        st.success(
            f"{escape_markdown(name)}: {report.added} added, {report.updated} updated, "
            f"{report.unchanged} unchanged, {len(report.skipped)} skipped"
        )
        for skipped in report.skipped[:20]:
            st.caption(escape_markdown(str(skipped)))


def export(history: Sequence[Answer]) -> None:
    st.subheader("Export")
    st.download_button(
        "Conversation (Markdown)", conversation_markdown(history), file_name="paperchat.md", mime="text/markdown"
    )
    cited = bibtex(s.paper for answer in history for s in answer.cited_sources)
    st.download_button(
        "Cited papers (BibTeX)", cited, file_name="paperchat.bib", mime="application/x-bibtex", disabled=not cited
    )


# --- answers ----------------------------------------------------------------------------------


def render_turn(answer: Answer, turn: int) -> None:
    """One stored question and its answer, from the final (citation-checked) record."""
    with st.chat_message("user"):
        st.markdown(escape_markdown(answer.question))
    with st.chat_message("assistant"):
        render_searched_for(answer.question, answer.standalone_question, answer.analysis)
        render_answer(answer, turn)


def render_searched_for(question: str, standalone: str, analysis: QuestionAnalysis | None) -> None:
    """What was searched: the rewritten follow-up, and how the question was read (type, key
    terms, the filters it states)."""
    parts = []
    if standalone != question:
        parts.append(standalone)
    if analysis is not None:
        parts.append(analysis.summary_line)
    if parts:
        st.caption("Searched for: " + escape_markdown(" · ".join(parts)))


def render_answer(answer: Answer, turn: int) -> None:
    # Answer text is Markdown written by our backends (bold titles, [n] markers, a table).
    st.markdown(answer.text)
    if answer.note:
        st.info(escape_markdown(answer.note), icon=":material/info:")
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
    render_sources(answer, turn)


def offer_offline(request: Request, *, key: str) -> None:
    st.button("Answer from the abstracts instead", key=key, icon=":material/format_quote:", on_click=ask_next, args=(request,))


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


def render_sources(answer: Answer, turn: int) -> None:
    """A folded card per cited paper; a collection's further matches; the closest papers of a
    decline; then the papers retrieved but not cited, together."""
    cited = {s.number for s in answer.cited_sources}
    for source in answer.cited_sources:
        citations = [c for c in answer.citations if c.number == source.number and c.support]
        supports = dict.fromkeys(c.support for c in citations if c.supported)
        unsupported = dict.fromkeys(c.citing_sentence for c in citations if not c.supported)
        with st.expander(f"[{source.number}] {title_markdown(source.paper)}"):
            render_paper(source.paper, list(supports), key=f"summarize-{turn}-{source.number}", unsupported=list(unsupported))
    matched = {m.number: m for m in answer.matches}
    more = [s for s in answer.sources if s.number in matched and s.number not in cited]
    if more:
        with st.expander(f"All {len(matched)} matching papers ({len(more)} more than shown)"):
            for source in [s for s in answer.sources if s.number in matched]:
                st.markdown(f"[{source.number}] **{title_markdown(source.paper)}**")
                st.caption(to_markdown(matched[source.number].sentence))
    if answer.closest:
        with st.expander(f"Closest papers: they do not answer this ({len(answer.closest)})"):
            render_paper_list(answer.closest)
    others = [s for s in answer.sources if s.number not in cited and s.number not in matched]
    if others and answer.form != "summary":
        with st.expander(f"Retrieved but not cited ({len(others)})"):
            render_paper_list(others)


def render_paper_list(sources: Sequence[Source]) -> None:
    for source in sources:
        st.markdown(f"[{source.number}] {title_markdown(source.paper)}")
        byline = " — ".join(x for x in (source.paper.author_line, placement(source.paper)) if x)
        st.caption(escape_markdown(byline))


def title_markdown(paper: Paper) -> str:
    """The paper's title with its math rendered (KaTeX); an untitled paper's display name."""
    return to_markdown(paper.title) if paper.title else escape_markdown(paper.display_title)


def placement(paper: Paper) -> str:
    """Where the paper sits: "Deep Learning · Attention Mechanisms — ICML 2025"."""
    return " — ".join(x for x in (paper.category, venue_year(paper)) if x)


def render_paper(paper: Paper, supports: Sequence[str], *, key: str, unsupported: Sequence[str] = ()) -> None:
    st.markdown(escape_markdown(", ".join(paper.authors) or "Unknown authors"))
    if placement(paper):
        st.caption(escape_markdown(placement(paper)))
    if paper.url.startswith(("https://", "http://")):
        st.link_button("Open the paper", paper.url)
    elif paper.url:
        st.caption(escape_markdown(paper.url))
    if supports:
        st.markdown("**Supporting sentence**" if len(supports) == 1 else "**Supporting sentences**")
        for sentence in supports:
            st.markdown(f":orange-background[{to_markdown(sentence)}]")
    for claim in unsupported:
        st.error(f"This paper's abstract does not support the claim “{escape_markdown(claim)}”.", icon=":material/block:")
    st.markdown("**Abstract**")
    st.markdown(to_markdown(paper.abstract))
    summary = Request(f"Summarize “{paper.display_title}”", summary_of=paper.id)
    st.button("Summarize this paper", key=key, on_click=ask_next, args=(summary,))


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
            waiting = None
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


# --- empty state ------------------------------------------------------------------------------


def examples(index: Index) -> list[Request]:
    """Questions this corpus can answer: its two biggest categories and two of its papers."""
    topics = dict.fromkeys(c.split(" · ")[-1] for c in list(index.stats().categories)[:2])
    asks = [Request(f"Which papers work on {topic}?") for topic in topics]
    # The shortest titles, so the buttons stay one line where they can (among the first 2,000
    # papers: reading every title of a large library would hold the page up).
    titled = sorted((p for p in index.sample(2000).values() if p.title), key=lambda p: (len(p.title), p.id))
    return asks + [Request(f"Summarize “{p.title}”", summary_of=p.id) for p in titled[:2]]


def render_examples(index: Index) -> None:
    asks = examples(index)
    if not asks:
        st.info(
            f"The index at {escape_markdown(index.location)} is empty. "
            "Add papers with `paperchat ingest data/papers.jsonl`, then reload this page."
        )
        return
    st.markdown("Ask a question about the indexed papers, or try one of these:")
    columns = st.columns(2)
    for i, ask in enumerate(asks):
        columns[i % 2].button(escape_markdown(ask.text), key=f"example-{i}", on_click=ask_next, args=(ask,))


# --- page -------------------------------------------------------------------------------------


def chat() -> None:
    try:
        assistant = load_assistant()
        history = current_history(assistant.settings)
        filters, k = sidebar(assistant, history)
    except PaperChatError as error:  # no index, or a shared server that went away
        show_error(error)
        st.stop()
    for turn, answer in enumerate(history):
        render_turn(answer, turn)

    typed = st.chat_input("Ask about the papers")
    request = st.session_state.pop("pending", None) or (Request(typed) if typed else None)
    if request is None:
        if not history:
            render_examples(assistant.index)
        return
    answer = answer_live(assistant.offline() if request.offline else assistant, request, history, filters, k)
    if answer is not None:
        history.append(answer)
        save_turn(assistant.settings, answer)
        # Redraw from the stored Answer: its checked text, source cards and the exports.
        st.rerun()


chat()
