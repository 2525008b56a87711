"""Citation markers: parsing, checking against the retrieved sources, and grounding in abstracts."""

from __future__ import annotations

import pytest

from rag.answering.citations import CitedSentence, check_citations, cited_sentences, find_support, held_back_claims
from rag.answering.markers import (
    HELD_BACK_MARK,
    CitationMarker,
    cited_numbers,
    drop_invalid,
    find_citation_markers,
    strip_citations,
)
from rag.records import Paper, Source

FLAT_LORA = (
    "Fine-tuning large-scale pre-trained models is prohibitively expensive in terms of computation and "
    "memory costs. A solution that appears flat in the loss landscape of the LoRA space may still exhibit "
    "sharp directions in the full parameter space, potentially compromising generalization.We introduce "
    "Flat-LoRA, which aims to identify a low-rank adaptation situated in a flat region of the full parameter "
    "space. Further, we design a refined strategy for generating random perturbations to enhance performance "
    "and carefully manage memory overhead using random seeds."
)
MOH = (
    "We show that multi-head attention can be expressed in the summation form. Extensive experiments on ViT, "
    "DiT, and LLMs demonstrate that MoH outperforms multi-head attention by using only 50%$\\sim$90% of the "
    "attention heads. Notably, MoH-LLaMA3-8B achieves an average accuracy of 64.0% across 14 benchmarks."
)
ACTION_PIECE = (
    "Generative recommendation (GR) is an emerging paradigm where user actions are tokenized into discrete "
    "token patterns. To address this issue, we propose ActionPiece to explicitly incorporate context when "
    "tokenizing action sequences."
)


def paper(pid: str, title: str, abstract: str) -> Paper:
    return Paper(id=pid, title=title, authors=("Ann Author", "Bo Writer"), abstract=abstract, url=f"https://x.org/{pid}")


def make_sources() -> list[Source]:
    return [
        Source(number=1, paper=paper("flat", "Flat-LoRA", FLAT_LORA), score=0.9),
        Source(number=2, paper=paper("moh", "MoH", MOH), score=0.8),
        Source(number=3, paper=paper("ap", "ActionPiece", ACTION_PIECE), score=0.7),
    ]


SOURCES = make_sources()


def numbers_and_claims(report):
    return [(c.number, c.citing_sentence) for c in report.citations]


# --- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Flat minima help [1].", [1]),
        ("Both do [1, 2].", [1, 2]),
        ("Both do [2,1].", [2, 1]),
        ("Both do [1][3].", [1, 3]),
        ("All do [1-3].", [1, 2, 3]),
        ("All do [1–3].", [1, 2, 3]),
        ("Mixed [1, 4-5; 7].", [1, 4, 5, 7]),
        ("Named [Source 2] and [source 3].", [2, 3]),
        ("Named [Sources 1, 2].", [1, 2]),
        ("Repeats [2] then [1] then [2, 1].", [2, 1]),
    ],
)
def test_cited_numbers_reads_every_marker_form_in_order(text, expected):
    assert cited_numbers(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a checkbox [x] item",
        "see [the paper](https://example.org/1)",
        "see [1](https://example.org/1)",
        "scores in [0, 1] are probabilities",
        "a range [1, 100] of values",
        "published [2022] in a venue",
        "half-open [0.5, 1] interval",
        "backwards [3-1] range",
        "a footnote[^1]",
        "math $x \\in [1, 2]$ here",
        "code `a[1]` here",
    ],
)
def test_non_citations_are_not_markers(text):
    assert find_citation_markers(text) == []
    assert strip_citations(text) == text


def test_markers_carry_their_span_and_numbers():
    text = "Foo [1, 2] bar [Source 3]."

    assert find_citation_markers(text) == [CitationMarker(4, 10, (1, 2)), CitationMarker(15, 25, (3,))]


def test_dollar_amounts_are_not_math_so_markers_between_them_count():
    assert cited_numbers("It costs $5 [1] and $10 to run.") == [1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Flat minima help [1].", "Flat minima help."),
        ("Flat minima help [1] a lot.", "Flat minima help a lot."),
        ("Flat minima help.[1] MoH too. [2]", "Flat minima help. MoH too."),
        ("[1] Flat minima help.", "Flat minima help."),
        ("Flat minima help ([1]).", "Flat minima help."),
        ("Flat minima help [1][2], truly.", "Flat minima help, truly."),
        ("- Flat [1]\n- MoH [2]", "- Flat\n- MoH"),
    ],
)
def test_strip_citations_tidies_spacing(text, expected):
    assert strip_citations(text) == expected


# --- check_citations: validity ----------------------------------------------------------------


def test_good_citations_are_kept_and_resolved():
    text = "Flat-LoRA seeks flat regions of the full parameter space [1]. MoH uses fewer heads [2]."
    report = check_citations(text, SOURCES)

    assert report.text == text
    assert report.invalid == ()
    assert report.uncited is False
    assert numbers_and_claims(report) == [
        (1, "Flat-LoRA seeks flat regions of the full parameter space."),
        (2, "MoH uses fewer heads."),
    ]
    first = report.citations[0]
    assert (first.paper_id, first.title, first.authors, first.url) == (
        "flat", "Flat-LoRA", ("Ann Author", "Bo Writer"), "https://x.org/flat",
    )


def test_out_of_range_citations_are_removed_reported_and_text_cleaned():
    text = "Flat-LoRA seeks flat regions [7]. MoH uses fewer heads [2, 9]. ActionPiece adds context [9][3]."
    report = check_citations(text, SOURCES)

    assert report.text == "Flat-LoRA seeks flat regions. MoH uses fewer heads [2]. ActionPiece adds context [3]."
    assert report.invalid == (7, 9)
    assert [c.number for c in report.citations] == [2, 3]


def test_numbers_are_checked_against_source_numbers_not_positions():
    sources = [SOURCES[0], SOURCES[2]]  # numbers 1 and 3: there is no [2]
    report = check_citations("MoH uses fewer heads [2]. ActionPiece adds context [3].", sources)

    assert report.invalid == (2,)
    assert report.text == "MoH uses fewer heads. ActionPiece adds context [3]."
    assert [(c.number, c.paper_id) for c in report.citations] == [(3, "ap")]


def test_partly_invalid_range_keeps_the_valid_numbers():
    report = check_citations("All three do it [2-5].", SOURCES)

    assert report.text == "All three do it [2, 3]."
    assert report.invalid == (4, 5)
    assert [c.number for c in report.citations] == [2, 3]


def test_answer_without_citations_is_uncited():
    report = check_citations("Flat-LoRA seeks flat regions. MoH uses fewer heads.", SOURCES)

    assert report.uncited is True
    assert report.citations == ()
    assert report.invalid == ()


def test_answer_with_only_invalid_citations_is_uncited():
    report = check_citations("Flat-LoRA seeks flat regions [8].", SOURCES)

    assert report.uncited is True
    assert report.invalid == (8,)
    assert report.text == "Flat-LoRA seeks flat regions."


def test_markdown_links_and_intervals_are_not_citations():
    text = "Scores lie in [0, 1]; see [the code](https://github.com/nblt/Flat-LoRA) and [4](https://x.org)."
    report = check_citations(text, SOURCES)

    assert report.text == text
    assert report.uncited is True
    assert report.invalid == ()


# --- check_citations: repeats, groups, ranges ---------------------------------------------------


def test_repeated_citation_in_one_sentence_gives_one_citation():
    report = check_citations("Flat-LoRA [1] seeks flat regions [1].", SOURCES)

    assert numbers_and_claims(report) == [(1, "Flat-LoRA seeks flat regions.")]


def test_repeated_citation_in_two_sentences_gives_two_citations():
    report = check_citations("Flat-LoRA seeks flat regions [1]. It also uses random seeds [1].", SOURCES)

    assert numbers_and_claims(report) == [
        (1, "Flat-LoRA seeks flat regions."),
        (1, "It also uses random seeds."),
    ]


def test_identical_sentences_citing_the_same_source_are_not_duplicated():
    report = check_citations("MoH uses fewer heads [2].\n\nMoH uses fewer heads [2].", SOURCES)

    assert numbers_and_claims(report) == [(2, "MoH uses fewer heads.")]


@pytest.mark.parametrize("marker", ["[1, 2]", "[1,2]", "[1][2]", "[1-2]", "[1–2]", "[Source 1, 2]"])
def test_grouped_and_ranged_markers_cite_each_source(marker):
    report = check_citations(f"Both adapt large models efficiently {marker}.", SOURCES)

    assert numbers_and_claims(report) == [
        (1, "Both adapt large models efficiently."),
        (2, "Both adapt large models efficiently."),
    ]
    assert report.uncited is False


# --- check_citations: which sentence a marker belongs to ----------------------------------------


def test_marker_after_the_period_belongs_to_the_sentence_before():
    text = "Flat-LoRA manages memory with random seeds. [1] MoH uses fewer heads. [2]"
    report = check_citations(text, SOURCES)

    assert numbers_and_claims(report) == [
        (1, "Flat-LoRA manages memory with random seeds."),
        (2, "MoH uses fewer heads."),
    ]


def test_marker_on_its_own_line_belongs_to_the_sentence_above():
    text = "- Flat-LoRA manages memory with random seeds.\n  [1]\n- MoH uses fewer heads.\n[2]"
    report = check_citations(text, SOURCES)

    assert numbers_and_claims(report) == [
        (1, "Flat-LoRA manages memory with random seeds."),
        (2, "MoH uses fewer heads."),
    ]


def test_marker_opening_a_line_belongs_to_the_text_after_it():
    text = "## Findings\n\n[2] MoH uses fewer heads."
    report = check_citations(text, SOURCES)

    assert numbers_and_claims(report) == [(2, "MoH uses fewer heads.")]


def test_markdown_layout_is_stripped_from_citing_sentences():
    text = (
        "## Comparison\n\n"
        "- **Flat-LoRA** looks for flat minima [1].\n"
        "- **MoH**: uses fewer attention heads [2].\n"
        "1. *ActionPiece* adds context [3]."
    )
    report = check_citations(text, SOURCES)

    assert numbers_and_claims(report) == [
        (1, "Flat-LoRA looks for flat minima."),
        (2, "uses fewer attention heads."),
        (3, "*ActionPiece* adds context."),
    ]


def test_et_al_before_a_marker_does_not_split_the_sentence():
    report = check_citations("As Jin et al. [2] show, heads can be skipped.", SOURCES)

    assert numbers_and_claims(report) == [(2, "As Jin et al. show, heads can be skipped.")]


# --- support ----------------------------------------------------------------------------------


def test_lexical_support_picks_the_matching_abstract_sentence():
    report = check_citations("Memory overhead is managed with random seeds [1].", SOURCES)

    (citation,) = report.citations
    assert citation.support.startswith("Further, we design a refined strategy")
    assert 0.0 < citation.support_score < 1.0


def test_support_follows_the_scorer_when_given():
    calls = []

    def scorer(claim: str, candidates: list[str]) -> list[float]:
        calls.append((claim, list(candidates)))
        return [0.9 if "14 benchmarks" in c else 0.1 for c in candidates]

    report = check_citations("MoH is accurate [2].", SOURCES, scorer=scorer)

    (citation,) = report.citations
    assert citation.support == "Notably, MoH-LLaMA3-8B achieves an average accuracy of 64.0% across 14 benchmarks."
    assert citation.support_score == pytest.approx(0.9)
    assert calls == [("MoH is accurate.", [
        "We show that multi-head attention can be expressed in the summation form.",
        "Extensive experiments on ViT, DiT, and LLMs demonstrate that MoH outperforms multi-head attention "
        "by using only 50%$\\sim$90% of the attention heads.",
        "Notably, MoH-LLaMA3-8B achieves an average accuracy of 64.0% across 14 benchmarks.",
    ])]


def test_extractive_copy_wins_over_the_scorer_without_asking_it():
    copied = "We show that multi-head attention can be expressed in the summation form."
    asked = []

    def contrary(claim: str, candidates: list[str]) -> list[float]:
        asked.append(claim)
        return [0.2 if c == copied else 0.8 for c in candidates]

    report = check_citations(f"**MoH**: {copied} [2]", SOURCES, scorer=contrary)

    (citation,) = report.citations
    assert citation.citing_sentence == copied
    assert citation.support == copied
    # Word for word it is the sentence: nothing to score, so nothing is embedded.
    assert citation.support_score == 1.0 and not asked
    quoted = check_citations(f"In their words: “{copied}” [2]", SOURCES, scorer=contrary)
    assert quoted.citations[0].support == copied and asked, "a quote of part of it is still scored"


def test_near_copy_wins_over_the_scorer():
    sentence = "Notably, MoH-LLaMA3-8B achieves an average accuracy of 64.0% across 14 benchmarks."
    near = "Notably, MoH-LLaMA3-8B reaches an average accuracy of 64.0% across 14 benchmarks."

    support, _ = find_support(near, MOH, scorer=lambda claim, cands: [1.0, 0.9, 0.0])

    assert support == sentence


def test_extractive_answer_grounds_every_quoted_sentence():
    # The shape the extractive backend writes: a bold title label, then quoted sentences, each cited.
    text = (
        "**Flat-LoRA**: We introduce Flat-LoRA, which aims to identify a low-rank adaptation situated in a "
        "flat region of the full parameter space. [1] Further, we design a refined strategy for generating "
        "random perturbations to enhance performance and carefully manage memory overhead using random "
        "seeds. [1]\n\n"
        "**ActionPiece**: To address this issue, we propose ActionPiece to explicitly incorporate context "
        "when tokenizing action sequences. [3]"
    )
    report = check_citations(text, SOURCES)

    assert len(report.citations) == 3
    for citation in report.citations:
        assert citation.support == citation.citing_sentence
        assert citation.support_score == pytest.approx(1.0)
    assert report.citations[0].support.startswith("We introduce Flat-LoRA")


def test_scorer_returning_the_wrong_number_of_scores_is_an_error():
    with pytest.raises(ValueError, match="2 scores for 3 sentences"):
        check_citations("MoH is accurate [2].", SOURCES, scorer=lambda claim, cands: [0.1, 0.2])


def test_empty_abstract_has_no_support():
    sources = [Source(number=1, paper=Paper(id="e", title="Empty", abstract=""), score=0.1)]
    report = check_citations("Something is claimed [1].", sources)

    (citation,) = report.citations
    assert (citation.support, citation.support_score) == ("", 0.0)
    assert citation.citing_sentence == "Something is claimed."


@pytest.mark.parametrize(
    "text",
    [
        "**ABC of burns. Introduction**: Burns are common [1]. They hurt [1].",
        "- **\\[untitled\\] Handling conflict is hard. Measuring it is…**: Burns are common [1]. They hurt [1].",
    ],
)
def test_a_lead_label_with_a_full_stop_stays_with_its_sentence(text):
    assert cited_sentences(text) == [CitedSentence("Burns are common.", (1,)), CitedSentence("They hurt.", (1,))]
    sources = [Source(number=1, paper=Paper(id="p", title="t", abstract="Burns are common. They hurt."), score=1.0)]
    assert [c.citing_sentence for c in check_citations(text, sources).citations] == ["Burns are common.", "They hurt."]


def test_every_sentence_is_listed_with_what_it_cites():
    text = "Heads are routed [1][2]. No source here.\n\n[3] A line-opening citation."
    assert cited_sentences(text) == [
        CitedSentence("Heads are routed.", (1, 2)),
        CitedSentence("No source here.", ()),
        CitedSentence("A line-opening citation.", (3,)),
    ]


def test_link_citations_makes_each_linked_number_a_link_with_its_tip():
    from rag.answering.markers import link_citations

    links = {1: ("#ev-0-1", 'MoH — "routes" tokens | heads\nfast'), 2: ("#ev-0-2", "LoRA \\ flat")}
    text = "MoH is cheaper [1], and LoRA too [1, 2]; see [3] and costs $[1]$."
    linked = link_citations(text, links)
    assert linked == (
        'MoH is cheaper [[1]](#ev-0-1 "MoH — \\"routes\\" tokens \\| heads fast"), and LoRA too '
        '[[1]](#ev-0-1 "MoH — \\"routes\\" tokens \\| heads fast")[[2]](#ev-0-2 "LoRA \\\\ flat"); see [3] and costs $[1]$.'
    )
    assert link_citations("No citations here.", links) == "No citations here."


def test_citation_tips_give_each_cited_papers_title_and_supporting_sentence():
    from rag.answering.markers import citation_tips
    from rag.records import Answer, Citation, Paper, Source

    moh = Paper(id="moh", title="MoH: Mixture-of-Head $\\mathcal{O}(1)$ Attention", abstract="MoH routes tokens to heads.")
    lora = Paper(id="lora", title="Flat-LoRA", abstract="Flat minima.")
    other = Paper(id="x", title="Uncited", abstract="Nothing.")

    def cite(number, paper, support, supported=True):
        return Citation(
            number=number, paper_id=paper.id, title=paper.title, authors=(), citing_sentence="claim",
            support=support, support_score=0.9, supported=supported,
        )

    answer = Answer(
        question="q", standalone_question="q", text="MoH [1]; LoRA [2].", backend="extractive",
        sources=tuple(Source(number=n, paper=p, score=1.0) for n, p in enumerate((moh, lora, other), 1)),
        citations=(cite(1, moh, "MoH routes tokens to heads."), cite(2, lora, "Flat minima.", supported=False)),
    )
    tips = citation_tips(answer)
    assert tips == {1: "MoH: Mixture-of-Head 𝒪(1) Attention — “MoH routes tokens to heads.”", 2: "Flat-LoRA"}


def test_held_back_claims_are_the_sentences_whose_only_citation_was_cut_and_marked():
    # The stream guard cuts "[9]" (no source 9) before it is shown and marks where it stood.
    text, invalid = drop_invalid(
        f"{FLAT_LORA.split('.')[0]} [1]. Heads are experts [9]. It wins [1, 9]. Experts vote. [9]\n[9] Heads route.",
        {1, 2},
        mark=HELD_BACK_MARK,
    )
    assert invalid == [9, 9, 9, 9]
    assert "Heads are experts *(no such source)*. It wins [1]. Experts vote. *(no such source)*" in text
    assert held_back_claims(text) == ["Heads are experts.", "Experts vote.", "Heads route."]
    # The mark is no part of a claim that is checked.
    report = check_citations(text, SOURCES)
    assert report.invalid == () and [c.citing_sentence for c in report.citations] == [FLAT_LORA.split('.')[0] + ".", "It wins."]
    assert held_back_claims("Flat-LoRA seeks flat regions [1]. So does MoH [2]. Nothing cited here.") == []
