"""The answering chain on the extractive backend and on LangChain's fake chat model."""

from __future__ import annotations

import json

import pytest
from conftest import COMPARED_WITH_BANDITS, SEED_SET
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from rag.answering.backends import ModelBackend
from rag.answering.chain import Assistant, DoneEvent, SourcesEvent, TokenEvent
from rag.question.followup import listed_papers, resolve_by_rule, with_choice
from rag.records import Filters

ITEMS = list(map(json.loads, SEED_SET.read_text().splitlines()))
ANSWERABLE = [q for q in ITEMS if q["type"] in ("lookup", "multi")]


@pytest.fixture(scope="module")
def assistant(seed_index):
    return Assistant(seed_index, seed_index.settings)


def test_extractive_is_the_default_without_a_key(assistant, monkeypatch):
    from rag.answering.backends import choose_backend

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PAPERCHAT_OPENAI_API_KEY", "PAPERCHAT_OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    keyless = {"backend": "auto", "openai_api_key": None, "openai_base_url": None, "local_model_path": None}
    auto = choose_backend(assistant.settings.model_copy(update=keyless), assistant.vectors)
    assert (auto.name, auto.reason) == ("extractive", "no OPENAI_API_KEY")
    assert (assistant.backend.name, assistant.backend.reason) == ("extractive", "backend 'extractive' was asked for")


@pytest.mark.semantic
@pytest.mark.parametrize("item", ANSWERABLE, ids=[q["id"] for q in ANSWERABLE])
def test_extractive_answers_cite_only_retrieved_sources(assistant, item):
    answer = assistant.ask(item["question"])
    numbers = {s.number for s in answer.sources}
    assert answer.covered and not answer.uncited and not answer.invalid_citations
    assert answer.citations and all(c.number in numbers for c in answer.citations)
    # Extractive answers quote the abstracts, so each citation's support is the quoted sentence.
    for c in answer.citations:
        assert c.support in next(s.paper.abstract for s in answer.sources if s.number == c.number)
    assert set(item["gold"]) & {s.paper.id for s in answer.cited_sources}


def test_stream_yields_sources_then_tokens_then_the_answer(assistant):
    events = list(assistant.stream("How can a language agent get step-level guidance during inference?"))
    assert isinstance(events[0], SourcesEvent)
    assert isinstance(events[-1], DoneEvent)
    tokens = [e.text for e in events if isinstance(e, TokenEvent)]
    assert len(tokens) > 1
    answer = events[-1].answer
    assert "".join(tokens).strip() == answer.text
    assert {"retrieve", "generate", "total"} <= set(answer.timings)


@pytest.mark.semantic
def test_no_answerable_seed_question_is_refused(assistant):
    # Measured 2026-12-02 at min_relevance 0.37: none of the 51 refused.
    wrongly = [q["id"] for q in ANSWERABLE if not assistant.ask(q["question"]).covered]
    assert wrongly == []


@pytest.mark.semantic
@pytest.mark.parametrize("question", ["What is the best recipe for sourdough bread?", "What is the capital of France?"])
def test_off_topic_question_says_so_and_cites_nothing(assistant, question):
    answer = assistant.ask(question)
    assert not answer.covered and answer.form in ("not covered", "unclear")
    assert answer.citations == () and answer.sources == ()
    assert answer.closest, "a decline offers the closest papers, apart from the answer"


def test_summary_cites_the_one_paper(assistant):
    answer = assistant.summarize("Flat-LoRA")
    assert answer.citations and {c.number for c in answer.citations} == {1}
    assert answer.sources[0].paper.title.startswith("Flat-LoRA")
    assert len(answer.citations) >= 3


@pytest.mark.semantic
def test_invalid_citation_from_a_model_is_removed_and_reported(seed_index):
    reply = "Heads can be routed per token [1]. Another paper does it too [9]."
    fake = GenericFakeChatModel(messages=iter([AIMessage(reply)]))
    assistant = Assistant(seed_index, seed_index.settings, backend=ModelBackend.wrapping(fake, seed_index.settings, name="fake", reason="test"))
    answer = assistant.ask("Which papers make attention cheaper?")
    assert answer.invalid_citations == (9,)
    assert "[9]" not in answer.text
    assert [c.number for c in answer.citations] == [1]


@pytest.mark.semantic
def test_a_model_answer_without_citations_is_flagged(seed_index):
    fake = GenericFakeChatModel(messages=iter([AIMessage("Attention can be made cheaper.")]))
    assistant = Assistant(seed_index, seed_index.settings, backend=ModelBackend.wrapping(fake, seed_index.settings, name="fake", reason="test"))
    assert assistant.ask("Which papers make attention cheaper?").uncited


@pytest.mark.semantic  # both bandit papers cited takes real embeddings
def test_follow_ups_are_rewritten_by_rule(assistant):
    first = assistant.ask("Which papers are about multi-armed bandits?")
    # "The second one" is the second paper the answer lists; "[2]" is source 2, listed or not.
    listed = listed_papers(first)
    assert len(listed) >= 2, "both bandit papers are cited"
    assert resolve_by_rule("Summarize the second one", [first]) == f'Summarize "{listed[1].paper.display_title}"'
    assert first.sources[1].paper.display_title in resolve_by_rule("compare [1] and [2]", [first])
    follow = resolve_by_rule("what are its main results?", [first])
    assert follow.startswith("what are its main results?") and "bandits" in follow
    assert resolve_by_rule("What is Flat-LoRA?", [first]) == "What is Flat-LoRA?"
    assert resolve_by_rule("what about it?", []) == "what about it?"


@pytest.mark.semantic
def test_a_summary_follow_up_summarizes_the_paper_it_names(assistant):
    first = assistant.ask("Which papers are about multi-armed bandits?")
    second = listed_papers(first)[1].paper
    summary = assistant.ask("summarize the second one", history=[first])
    assert summary.question == "summarize the second one"
    assert [s.paper.id for s in summary.sources] == [second.id]
    assert summary.citations and {c.number for c in summary.citations} == {1}

    single = assistant.ask("How does Flat-LoRA keep memory low?")
    assert len({c.number for c in single.citations}) == 1
    it = assistant.ask("summarize it", history=[single])
    assert it.standalone_question == f"Summarize “{single.cited_sources[0].paper.display_title}”"
    assert len(it.sources) == 1


@pytest.mark.semantic
def test_a_follow_up_past_the_cited_papers_asks_which_paper_and_a_choice_answers_it(assistant, monkeypatch):
    first = assistant.ask("Which papers are about bandits?")
    cited = [s.paper for s in first.cited_sources]
    assert 1 <= len(cited) < 3 and len(first.sources) >= 3, "the bandits answer cites fewer papers than it retrieved"

    def no_search(*args, **kwargs):
        raise AssertionError("a clarification retrieves nothing")

    monkeypatch.setattr("rag.answering.chain.rank", no_search)
    events = list(assistant.stream("summarize the third one", history=[first]))
    assert isinstance(events[0], SourcesEvent) and events[0].sources == ()
    assert isinstance(events[-1], DoneEvent)
    clarify = events[-1].answer
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == clarify.text
    assert clarify.form == "clarify" and clarify.text.startswith("Which paper do you mean by “the third one”?")
    assert [c.paper.id for c in clarify.choices] == [p.id for p in cited]
    assert clarify.sources == clarify.citations == ()
    # Nor is a model asked, to rewrite the follow-up or to answer it: it has no reply to give.
    silent = GenericFakeChatModel(messages=iter([]))
    backend = ModelBackend.wrapping(silent, assistant.settings, name="fake", reason="test")
    modelled = Assistant(assistant.index, assistant.settings, backend=backend)
    assert modelled.ask("summarize the third one", history=[first]).choices == clarify.choices
    monkeypatch.undo()

    # A choice, by its button's question or by its number, is summarized: not the uncited third source.
    chosen = cited[-1]
    for reply in (with_choice(clarify, clarify.choices[-1]), str(len(cited))):
        summary = assistant.ask(reply, history=[first, clarify])
        assert summary.form == "summary" and [s.paper.id for s in summary.sources] == [chosen.id]
    assert chosen.display_title in with_choice(clarify, clarify.choices[-1])


@pytest.mark.semantic
def test_a_summary_request_naming_no_paper_is_answered_as_a_question(assistant):
    answer = assistant.ask("Summarize the work on sparse attention heads")
    # Searched as asked, not rewritten into one named paper's summary (which retrieves that one).
    assert answer.standalone_question == "Summarize the work on sparse attention heads"
    assert len(answer.sources) == assistant.settings.k
    assert answer.sources[0].paper.display_title.startswith("MoH") and answer.citations


def test_a_title_ending_in_a_period_stays_one_sentence_with_its_quote(embeddings):
    from rag.answering.answerability import assess
    from rag.answering.citations import cited_sentences
    from rag.answering.evidence import gather
    from rag.answering.extractive import ExtractiveBackend
    from rag.answering.request import AnswerRequest, Task
    from rag.index.embeddings import SentenceVectors
    from rag.question.analysis import analyze
    from rag.records import Paper, Source

    paper = Paper(id="sids", title="Sudden infant death syndrome.", abstract=(
        "Sudden infant death syndrome remains the leading cause of death for infants aged one month to one year. "
        "Prone sleeping raises the risk several fold."))
    vectors = SentenceVectors(embeddings)
    analysis = analyze("What causes sudden infant death?")
    evidence = gather(analysis, [Source(number=1, paper=paper, score=1.0)], vectors)
    request = AnswerRequest(Task.ANSWER, analysis.cleaned, analysis, evidence, assess(evidence, min_similarity=0.0))
    text = "".join(ExtractiveBackend(vectors, reason="test").stream(request))
    assert text.startswith("**Sudden infant death syndrome**: “")
    assert all(s.numbers == (1,) for s in cited_sentences(text))


def _no_search(*args, **kwargs):
    raise AssertionError("a clarification retrieves nothing")


@pytest.mark.semantic
def test_a_reference_to_a_paper_a_decline_said_does_not_answer_is_offered_not_taken(assistant, monkeypatch):
    declined = assistant.ask("Which papers detect bugs in smart contracts?")
    assert not declined.covered and len(declined.closest) >= 2
    second = declined.closest[1].paper
    monkeypatch.setattr("rag.answering.chain.rank", _no_search)
    offer = assistant.ask("summarize the second one", history=[declined])
    assert offer.form == "clarify" and [c.paper.id for c in offer.choices] == [second.id]
    assert offer.text.startswith(f"By “the second one” you mean “{second.display_title}”, one of the closest papers")
    assert offer.text.endswith("Summarize it anyway?") and declined.question in offer.text
    monkeypatch.undo()
    # Its button (the question asked again about it), or a yes, summarizes it.
    for reply in (with_choice(offer, offer.choices[0]), "yes"):
        summary = assistant.ask(reply, history=[declined, offer])
        assert summary.form == "summary" and [s.paper.id for s in summary.sources] == [second.id]


@pytest.mark.semantic
def test_ordinals_past_six_and_authors_are_references_not_search_words(assistant, monkeypatch):
    listing = assistant.ask("What do the ICML 2025 papers propose?")
    listed = [s.paper for s in listed_papers(listing)]
    assert len(listed) >= 8
    seventh = assistant.ask("and the seventh one?", history=[listing])
    assert seventh.standalone_question == f'and "{listed[6].display_title}"?'
    by = assistant.ask("summarize the one by Yuan", history=[listing])
    assert by.form == "summary" and [s.paper.short_name for s in by.sources] == ["MoH"]

    bandits = assistant.ask("Which papers are about bandits?")
    monkeypatch.setattr("rag.answering.chain.rank", _no_search)
    past = assistant.ask("and the seventh one?", history=[bandits])
    assert past.form == "clarify" and past.text.startswith("Which paper do you mean by “the seventh one”?")
    assert f"The last answer cites {len(listed_papers(bandits))} papers." in past.text


def test_an_answer_names_the_share_of_the_corpus_its_filters_leave(assistant):
    bandits = Filters(category="Online Learning and Bandits")
    answer = assistant.ask("Which papers are about exploration?", filters=bandits)
    assert answer.corpus == f"{len(assistant.index.matching(bandits))} of 20 ICML 2025 papers"
    assert assistant.ask("How does MoH work?").corpus == "20 ICML 2025 papers"


BANDITS = ("Multi-armed Bandits with Interference", "Instance-Optimal Pure Exploration for Linear Bandits on Continuous Arms")


@pytest.fixture(scope="module")
def moh(assistant):
    answer = assistant.ask("How does MoH work?")
    assert [s.paper.short_name for s in answer.cited_sources] == ["MoH"]
    return answer


@pytest.mark.semantic
@pytest.mark.parametrize(
    "follow_up",
    COMPARED_WITH_BANDITS,
)
def test_a_follow_up_comparing_the_last_answer_with_the_bandits_work_answers_from_both(assistant, moh, follow_up):
    answer = assistant.ask(follow_up, history=[moh])
    assert answer.answerability.answers and not answer.answerability.missing, answer.text
    assert "Not in the abstracts" not in answer.text
    assert set(BANDITS) <= {s.paper.title for s in answer.cited_sources}
    assert "MoH" in [s.paper.short_name for s in answer.cited_sources], "what “this” stood for is compared too"
    assert answer.standalone_question.count("following up on") <= 1


@pytest.mark.semantic
def test_a_follow_up_to_a_follow_up_is_joined_once_and_its_joining_words_are_no_key_terms(assistant, moh):
    history = [moh]
    for follow_up in ("What are its results?", "and what are their limits?", "How do these scale?"):
        answer = assistant.ask(follow_up, history=history)
        assert answer.standalone_question == resolve_by_rule(follow_up, [moh]), "joined to the real question, once"
        assert not {t.text.casefold() for t in answer.analysis.terms} & {"following", "up"}
        history.append(answer)


def _rewriting(assistant, reply: str) -> Assistant:
    """The assistant with a model whose one reply, to the condense prompt, is `reply`."""
    fake = GenericFakeChatModel(messages=iter([AIMessage(reply)]))
    return Assistant(assistant.index, assistant.settings, backend=ModelBackend.wrapping(fake, assistant.settings, name="fake", reason="test"))


@pytest.mark.semantic
@pytest.mark.parametrize(
    ("follow_up", "reply", "kept"),
    [
        ("What are its results?", "<question>What results does MoH report?</question></summary>", "What results does MoH report?"),
        ("What are its limitations?", "<rewrite>What limitations does Mixture-of-Head attention have?</rewrite>", "What limitations does Mixture-of-Head attention have?"),
        ("How does this compare to Flat-LoRA?", "</summary> How does MoH compare to Flat-LoRA?", "How does MoH compare to Flat-LoRA?"),
        ("Is this better than the bandits work?", '<answer type="question">Is MoH better than the bandits papers?</answer>\n', "Is MoH better than the bandits papers?"),
    ],
)
def test_tags_wrapped_around_a_models_rewrite_are_dropped_and_its_question_kept(assistant, moh, follow_up, reply, kept):
    assert _rewriting(assistant, reply).condense(follow_up, [moh]) == kept


@pytest.mark.semantic
@pytest.mark.parametrize(
    ("follow_up", "reply"),
    [
        # The last answer's subject (MoH) lost: the search would be for something else.
        ("How does this compare to the bandits work?", "<question>How do the bandits papers compare?</question></summary>"),
        ("Is this better than the bandits approaches?", "Which bandits papers are better?"),
        ("What are its limitations?", "What are the limitations?"),
        ("How does that scale to long sequences?", "How do transformers scale to long sequences?"),
        # A tag left inside: not one question.
        ("What are its results?", "<summary>The user asked about MoH</summary><question>What are MoH's results?</question>"),
    ],
)
def test_a_models_rewrite_that_loses_the_last_answers_subject_or_keeps_tags_is_not_searched(assistant, moh, follow_up, reply):
    standalone = _rewriting(assistant, reply).condense(follow_up, [moh])
    assert standalone == resolve_by_rule(follow_up, [moh])
    assert "MoH" in standalone and "<" not in standalone
