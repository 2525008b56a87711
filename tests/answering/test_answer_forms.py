"""Answerability and the extractive answer forms over the bundled 20 papers."""

from __future__ import annotations

import pytest

from rag.answering.chain import Assistant
from rag.answering.citations import cited_sentences
from rag.answering.forms.collection import SHOWN
from rag.records import Coverage, Grade

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def assistant(seed_index):
    return Assistant(seed_index, seed_index.settings)


@pytest.mark.parametrize(
    ("question", "coverage"),
    [
        # Nothing retrieved comes near: not found, and the closest papers are offered apart.
        ("Which papers detect bugs in smart contracts?", Coverage.NOT_COVERED),
        ("Show me Figure 3 of the MoH paper", Coverage.BEYOND),
        ("What learning rate does Flat-LoRA use?", Coverage.BEYOND),
        ("What accuracy does the proposed model get?", Coverage.UNCLEAR),
        ("Does the approach scale?", Coverage.UNCLEAR),
        # "baseline" is a rare word of these abstracts, but "the baseline" refers; it names no topic.
        ("How does their method compare to the baseline?", Coverage.UNCLEAR),
    ],
)
def test_what_the_corpus_does_not_answer_is_declined_without_a_citation(assistant, question, coverage):
    answer = assistant.ask(question)
    assert answer.answerability.coverage == coverage, answer.answerability
    assert answer.citations == () and answer.sources == ()
    assert answer.form == coverage.value and answer.text


def test_a_claim_worded_unlike_its_abstract_is_answered_and_a_far_one_declined(assistant):
    claim = assistant.ask("Letting every token choose which attention heads it uses makes inference cheaper.")
    assert claim.analysis.statement and claim.covered and claim.cited_sources[0].paper.short_name == "MoH"
    far = assistant.ask("Chloroquine taken weekly causes retinal toxicity after five years.")
    assert far.answerability.coverage == Coverage.NOT_COVERED and far.citations == ()


def test_a_question_in_other_words_than_the_abstracts_is_the_best_match_said_unconfirmed(assistant):
    answer = assistant.ask("Which paper predicts the air resistance of a car from its 3D shape?")
    assert answer.grade == Grade.BEST_MATCH and answer.closest == ()
    assert answer.cited_sources[0].paper.short_name == "DragSolver" and answer.text.startswith("**DragSolver**")
    assert answer.note.endswith("The closest match is DragSolver [1]; PaperChat could not confirm that it answers the question.")
    # A topic no abstract has leads with what is missing, and still quotes only the closest.
    federated = assistant.ask("Which papers study federated learning with differential privacy guarantees?")
    assert federated.grade == Grade.BEST_MATCH and federated.note.startswith("No abstract uses “federated")
    assert len(federated.cited_sources) <= 2


def test_each_grade_over_the_bundled_papers(assistant):
    assert assistant.ask("Which paper lets each token pick only some attention heads?").grade == Grade.ANSWERS
    # What a named paper's whole abstract lacks is checked: not found, though what is near is quoted.
    gpu = assistant.ask("What GPU was DragSolver trained on?")
    assert gpu.grade == Grade.NOT_FOUND and gpu.note == "Not in the abstracts: “GPU”." and gpu.citations
    # A terse query whose words the closest abstract does not have is a best match, not an answer.
    assert assistant.ask("knowledge graph link prediction").grade == Grade.BEST_MATCH
    assert assistant.ask("Which papers detect bugs in smart contracts?").grade == Grade.NOT_FOUND
    # Parts only different papers cover: the closest, said to lack what others have; not a decline.
    joined = assistant.ask("What is the drag coefficient of a Mixture-of-Head attention layer?")
    assert joined.grade == Grade.BEST_MATCH and joined.cited_sources[0].paper.short_name == "MoH"
    assert joined.note.startswith("The closest abstract does not use “drag coefficient”, which other abstracts do.")


def test_a_measure_no_abstract_reports_is_said_so_and_no_other_number_is_quoted(assistant):
    answer = assistant.ask("What ImageNet top-1 accuracy does MoH reach?")
    assert answer.answerability.coverage == Coverage.PARTLY
    assert answer.answerability.unreported == ("ImageNet top-1 accuracy",)
    assert answer.note == "No abstract gives a figure for “ImageNet top-1 accuracy”."
    assert "64.0" not in answer.text and answer.cited_sources[0].paper.short_name == "MoH"


def test_a_how_question_quotes_the_mechanism_and_a_result_question_the_number(assistant):
    how = assistant.ask("How does MoH make attention cheaper?")
    assert "MoH enables each token to select the appropriate attention heads" in how.text
    result = assistant.ask("How much better is MoH-LLaMA3-8B than LLaMA3-8B?")
    assert "outperforming LLaMA3-8B by 2.4%" in result.text
    # Quotes, attributed: "**MoH**: “...” [1]", never the assistant's own voice.
    assert result.text.startswith("**MoH**: “") and all(s.numbers for s in cited_sentences(result.text))


def test_a_result_question_about_a_named_paper_quotes_what_it_asks_of_it(assistant):
    # The title's words say which paper; "experiments" is what is asked of it.
    answer = assistant.ask("What did experiments show for censor-dependent variational inference?")
    assert "Extensive experiments validate our analysis" in answer.text


def test_why_gets_the_reason_and_latex_is_plain_text_in_a_quote(assistant):
    why = assistant.ask("Why do switchback policies fall short in bandits with interference?")
    assert "suffers a high variance, since it does not account for N" in why.text
    assert "$" not in why.text


def test_a_collection_lists_every_paper_above_the_bar(assistant):
    answer = assistant.ask("Which papers are about bandits?")
    assert answer.form == "collection"
    assert {s.paper.short_name for s in answer.cited_sources} == {
        "Multi-armed Bandits with Interference", "Instance-Optimal Pure Exploration for Linear Bandits on Continuous Arms",
    }
    assert [m.number for m in answer.matches] == [1, 2]


def test_a_collection_quotes_the_sentence_that_answers_not_the_one_sharing_words(assistant):
    # Five abstracts end with their code's address; one (MATS) also speaks of "coding abilities",
    # which the words "code" and "available" met as well as the address line did.
    answer = assistant.ask("Which papers say their code is available?")
    assert answer.form == "collection" and len(answer.matches) == 5
    for match in answer.matches:
        assert "available" in match.sentence and ("code" in match.sentence or "Code" in match.sentence)
        assert "coding abilities" not in match.sentence


def test_many_matches_are_grouped_capped_and_all_kept(assistant):
    answer = assistant.ask("What do the ICML 2025 papers propose?")
    assert len(answer.matches) == 20
    assert answer.text.startswith("20 papers match:") and f"…and {20 - SHOWN} more papers" in answer.text
    assert len(answer.cited_sources) == SHOWN and answer.text.count("\n\n**") >= 2  # grouped by category


def test_a_comparison_is_a_table_whose_cells_are_cited_or_say_not_reported(assistant):
    answer = assistant.ask("Compare MoH and Flat-LoRA")
    assert answer.form == "comparison" and [r.paper for r in answer.table.rows] == ["MoH", "Flat-LoRA"]
    assert answer.table.aspects == ("Problem", "Method", "Data", "Reported result")
    for row in answer.table.rows:
        for cell in row.cells:
            assert cell.text is None or cell.text in answer.sources[row.number - 1].paper.abstract
    for line in answer.text.splitlines()[4:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")][1:]
        assert all(c.endswith(("[1]", "[2]")) or c == "*not reported in the abstract*" for c in cells), line


def test_a_comparison_of_one_paper_is_an_answer_about_it(assistant):
    answer = assistant.ask("Compare MoH with itself")
    assert answer.form == "answer" and answer.cited_sources[0].paper.short_name == "MoH"


def test_a_declines_closest_papers_are_the_rankings_first_in_order_of_similarity(assistant):
    answer = assistant.ask("Which papers detect bugs in smart contracts?")
    shown = [answer.relevance_of(s.paper.id).similarity for s in answer.closest]
    assert len(shown) == 3 and shown == sorted(shown, reverse=True)
    assert {s.paper.id for s in answer.closest} == {r.paper_id for r in answer.relevance[:3]}, "the ranking's first three"
    assert [s.number for s in answer.closest] == [1, 2, 3], "numbered as shown: [2] is the second a reader sees"
