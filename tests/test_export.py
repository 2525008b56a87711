"""Conversation exports: Markdown with per-turn references, and BibTeX that parses back."""

from __future__ import annotations

import bibtexparser
from bibtexparser.middlewares import LatexDecodingMiddleware

from rag.corpus.reading import load_corpus
from rag.export import bibtex, conversation_bibtex, conversation_markdown
from rag.markup import escape_markdown
from rag.records import Answer, Citation, Filters, Paper, Source

MOH = Paper(
    id="moh",
    title="MoH: Multi-Head Attention as Mixture-of-Head Attention",
    authors=("Peng Jin", "Bo Zhu", "Li Yuan", "Shuicheng YAN"),
    abstract="We upgrade multi-head attention. MoH uses 50%$\\sim$90% of the heads.",
    category="Deep Learning · Attention Mechanisms",
    venue="ICML 2025",
    year=2025,
    url="https://icml.cc/virtual/2025/poster/44579",
)
LORA = Paper(
    id="lora",
    title="Flat-LoRA: Low-Rank Adaptation over a Flat Loss Landscape",
    authors=("Tao Li", "Zhengbao He"),
    abstract="Flat-LoRA finds flat minima at low memory cost.",
    venue="NeurIPS",
    year=2024,
    url="https://example.org/flat_lora",
)
# Every character BibTeX and Markdown treat specially, in the title, the names and the abstract.
SPECIAL = Paper(
    id="special",
    title="On {Sparse} Costs: 100% of R&D_x for $5 #1 ~ <script>alert(1)</script> **bold**",
    authors=("José Álvarez-Núñez", "van der Berg, Jan"),
    abstract="A back\\slash, {braces}, 5% & $x_1$ # ~ and [a link](javascript:alert(1)).",
    venue="Journal of Machine Learning Research",
    year=2023,
)


def source(number: int, paper: Paper) -> Source:
    return Source(number=number, paper=paper, score=1.0 / number)


def cite(number: int, paper: Paper, sentence: str) -> Citation:
    return Citation(
        number=number, paper_id=paper.id, title=paper.title, authors=paper.authors, url=paper.url,
        citing_sentence=sentence, support=sentence, support_score=1.0,
    )


def answer(question: str, text: str, sources: list[Source], cited: list[Citation]) -> Answer:
    return Answer(
        question=question, standalone_question=question, text=text, citations=tuple(cited),
        sources=tuple(sources), backend="extractive",
    )


def test_conversation_markdown_lists_each_turns_cited_papers():
    first = answer(
        "Which papers make attention cheaper?",
        "**MoH** routes tokens to fewer heads [1].",
        [source(1, MOH), source(2, LORA)],
        [cite(1, MOH, "MoH routes tokens to fewer heads.")],
    )
    second = answer(
        "And fine-tuning *memory*?",
        "Flat-LoRA keeps memory low [1], as does MoH [2].",
        [source(1, LORA), source(2, MOH)],
        [cite(1, LORA, "Flat-LoRA keeps memory low."), cite(2, MOH, "as does MoH")],
    )
    assert conversation_markdown([first, second]) == (
        "# PaperChat conversation\n\n"
        "## Q: Which papers make attention cheaper?\n\n"
        "*answered by: extractive*\n\n"
        "*Grade: answers: the abstracts answer it*\n\n"
        "**MoH** routes tokens to fewer heads [1].\n\n"
        "**References**\n\n"
        "[1] Peng Jin, Bo Zhu, Li Yuan, Shuicheng YAN. MoH: Multi-Head Attention as Mixture-of-Head "
        "Attention. ICML 2025. https://icml.cc/virtual/2025/poster/44579\n\n"
        "## Q: And fine-tuning \\*memory\\*?\n\n"
        "*answered by: extractive*\n\n"
        "*Grade: answers: the abstracts answer it*\n\n"
        "Flat-LoRA keeps memory low [1], as does MoH [2].\n\n"
        "**References**\n\n"
        "[1] Tao Li, Zhengbao He. Flat-LoRA: Low-Rank Adaptation over a Flat Loss Landscape. NeurIPS 2024. "
        "https://example.org/flat_lora\n\n"
        "[2] Peng Jin, Bo Zhu, Li Yuan, Shuicheng YAN. MoH: Multi-Head Attention as Mixture-of-Head "
        "Attention. ICML 2025. https://icml.cc/virtual/2025/poster/44579\n"
    )


def test_conversation_markdown_escapes_corpus_text_and_skips_empty_references():
    uncovered = answer("What about bread?", "The indexed papers do not cover this.", [source(1, LORA)], [])
    special = answer("Summarize it", "A summary [1].", [source(1, SPECIAL)], [cite(1, SPECIAL, "A summary.")])
    text = conversation_markdown([uncovered, special])
    assert text.count("**References**") == 1
    assert "[1] Tao Li" not in text  # retrieved, not cited
    reference = text.splitlines()[-1]
    assert reference == (
        "[1] José Álvarez-Núñez, van der Berg, Jan. On {Sparse} Costs: 100% of R\\&D\\_x for \\$5 \\#1 \\~ "
        "\\<script\\>alert\\(1\\)\\</script\\> \\*\\*bold\\*\\*. Journal of Machine Learning Research 2023."
    )


def scoped_turns() -> list[Answer]:
    first = answer("Which papers make attention cheaper?", "**MoH** routes tokens [1].", [source(1, MOH)], [cite(1, MOH, "MoH routes tokens.")])
    follow = answer("And its {results}?\nbriefly", "MoH keeps accuracy [1].", [source(1, MOH)], [cite(1, MOH, "MoH keeps accuracy.")])
    follow = follow.model_copy(
        update={
            "standalone_question": "What results does MoH report?",
            "corpus": "20 ICML 2025 papers",
            "filters": Filters(category="Deep Learning · Attention Mechanisms", year_min=2025),
            "created": "2026-12-05T10:00:00+00:00",
        }
    )
    return [first, follow]


def test_both_exports_carry_each_turns_scope_and_the_export_date():
    markdown = conversation_markdown(scoped_turns(), exported="2026-12-05 10:30 UTC")
    assert "*Exported 2026-12-05 10:30 UTC*" in markdown
    scope = markdown.split("## Q: And its")[1].splitlines()[2]
    assert "searched for: What results does MoH report?" in scope
    assert "corpus: 20 ICML 2025 papers" in scope and "category Deep Learning" in scope and "2025" in scope
    assert "answered by: extractive" in scope and "on 2026-12-05T10:00:00+00:00" in scope

    text = conversation_bibtex(scoped_turns(), exported="2026-12-05 10:30 UTC")
    head = text.split("@", 1)[0].splitlines()
    assert head[0] == "% PaperChat conversation, exported 2026-12-05 10:30 UTC"
    assert head[3] == "% Q: And its {results}? briefly"
    assert "searched for: What results does MoH report?" in head[4] and "corpus: 20 ICML 2025 papers" in head[4]
    # The comments are skipped by BibTeX readers; the one cited paper is one entry.
    assert list(entries(text)) == ["jin2025moh"]


def test_a_conversation_that_cites_nothing_exports_no_bibtex():
    assert conversation_bibtex([answer("What about bread?", "Not covered.", [source(1, LORA)], [])]) == ""


def test_escape_markdown_neutralises_markup_but_keeps_plain_words():
    assert escape_markdown("Multi-Head Attention: 3.5 times faster") == "Multi-Head Attention: 3.5 times faster"
    assert escape_markdown("# Title\n- item\n2. step") == "\\# Title\n\\- item\n2\\. step"
    # Streamlit's own syntax: colour directives, emoji codes, math.
    assert escape_markdown(":red[alert] :smile: $x$") == "\\:red\\[alert\\] \\:smile: \\$x\\$"


def entries(text: str, *middleware) -> dict:
    library = bibtexparser.parse_string(text, append_middleware=list(middleware))
    assert not library.failed_blocks
    return {e.key: e for e in library.entries}


def test_bibtex_keys_are_author_year_title_word_with_suffixes_for_clashes():
    clash = MOH.model_copy(update={"id": "moh-2", "title": "MoH Again"})
    untitled = Paper(id="x", abstract="No title or authors here.")
    text = bibtex([MOH, LORA, SPECIAL, clash, MOH, untitled])
    parsed = entries(text)
    # The repeated MoH is one entry; its clash with "MoH Again" gives both a suffix.
    assert list(parsed) == ["jin2025moha", "li2024flat", "alvareznunez2023sparse", "jin2025mohb", "paper"]
    assert [e.entry_type for e in parsed.values()] == ["inproceedings", "inproceedings", "article", "inproceedings", "misc"]
    moh = parsed["jin2025moha"].fields_dict
    assert moh["booktitle"].value == "ICML 2025"
    assert moh["author"].value == "Peng Jin and Bo Zhu and Li Yuan and Shuicheng YAN"
    assert moh["year"].value == "2025"
    assert moh["url"].value == MOH.url
    assert parsed["alvareznunez2023sparse"].fields_dict["journal"].value == "Journal of Machine Learning Research"
    assert set(parsed["paper"].fields_dict) == {"abstract"}


def test_bibtex_escapes_specials_and_parses_back_to_the_same_text(tmp_path):
    text = bibtex([MOH, LORA, SPECIAL])
    raw = entries(text)["alvareznunez2023sparse"].fields_dict
    assert raw["title"].value == (
        "{On \\{Sparse\\} Costs: 100\\% of R\\&D\\_x for \\$5 \\#1 \\textasciitilde{} "
        "<script>alert(1)</script> **bold**}"
    )
    assert raw["abstract"].value == (
        "A back\\textbackslash{}slash, \\{braces\\}, 5\\% \\& $x_1$ \\# \\textasciitilde{} "
        "and [a link](javascript:alert(1))."
    )
    assert "url" not in raw  # no address, no field
    assert entries(text)["li2024flat"].fields_dict["url"].value == "https://example.org/flat_lora"

    decoded = entries(text, LatexDecodingMiddleware())
    assert [e.fields_dict["title"].value for e in decoded.values()] == [MOH.title, LORA.title, SPECIAL.title]

    # PaperChat's own .bib loader reads the export back field for field.
    path = tmp_path / "cited.bib"
    path.write_text(text, encoding="utf-8")
    loaded = load_corpus(path).papers
    for original, again in zip([MOH, LORA, SPECIAL], loaded, strict=True):
        assert (again.title, again.authors, again.abstract, again.venue, again.year, again.url) == (
            original.title, tuple(_first_last(a) for a in original.authors), original.abstract,
            original.venue, original.year, original.url,
        )


def _first_last(name: str) -> str:
    # The loader writes every name "First Last"; BibTeX's "Last, First" comes back turned round.
    last, _, first = name.partition(", ")
    return f"{first} {last}" if first else name


def test_bibtex_of_nothing_is_empty():
    assert bibtex([]) == ""


def test_bibtex_keeps_the_abstracts_latex_and_escapes_the_rest():
    moh = entries(bibtex([MOH]))["jin2025moh"].fields_dict
    assert moh["abstract"].value == "We upgrade multi-head attention. MoH uses 50\\%$\\sim$90\\% of the heads."
    accented = MOH.model_copy(update={"abstract": "The Carath\\'eodory problem, \\textbf{in bold}, costs $5 & 10%."})
    assert entries(bibtex([accented]))["jin2025moh"].fields_dict["abstract"].value == (
        "The Carath\\'eodory problem, \\textbf{in bold}, costs \\$5 \\& 10\\%."
    )


def test_conversation_markdown_gives_a_clarification_and_the_papers_it_offers():
    clarify = Answer(
        question="Summarize the third one", standalone_question="Summarize the third one",
        text="Which paper do you mean by “the third one”? The last answer cites 2 papers.",
        citations=(), sources=(), backend="extractive", form="clarify", choices=(source(1, MOH), source(2, SPECIAL)),
    )
    text = conversation_markdown([clarify])
    assert text.startswith(
        "# PaperChat conversation\n\n## Q: Summarize the third one\n\n"
        "Which paper do you mean by “the third one”? The last answer cites 2 papers.\n\n"
        "**The papers it may mean**\n\n"
        "1. Peng Jin, Bo Zhu, Li Yuan, Shuicheng YAN. MoH: Multi-Head Attention as Mixture-of-Head Attention."
    ), "no backend answered it, and the choices are numbered as offered"
    assert text.splitlines()[-1].startswith("2. José Álvarez-Núñez, van der Berg, Jan. On {Sparse} Costs: 100% of R\\&D\\_x")
