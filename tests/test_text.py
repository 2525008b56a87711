"""Sentence splitting on real abstracts, and the lexical terms shared with the BM25 index."""

from __future__ import annotations

import bm25s
import pytest
import Stemmer

from rag.text import (
    STOP_WORDS,
    lexical_similarity,
    sentence_spans,
    split_sentences,
    term_words,
    tokenize_terms,
)

# Abstracts copied from /work/shared/data/seed_papers.jsonl.
FLAT_LORA = (
    "Fine-tuning large-scale pre-trained models is prohibitively expensive in terms of computation and "
    "memory costs. Low-Rank Adaptation (LoRA), a popular Parameter-Efficient Fine-Tuning (PEFT) method, "
    "offers an efficient solution by optimizing only low-rank matrices. Despite recent progress in improving "
    "LoRA's performance, the relationship between the LoRA optimization space and the full parameter space "
    "is often overlooked. A solution that appears flat in the loss landscape of the LoRA space may still "
    "exhibit sharp directions in the full parameter space, potentially compromising generalization.We "
    "introduce Flat-LoRA, which aims to identify a low-rank adaptation situated in a flat region of the full "
    "parameter space.Instead of adopting the well-established sharpness-aware minimization approach, which "
    "incurs significant computation and memory overheads, we employ a Bayesian expectation loss objective to "
    "preserve training efficiency. Further, we design a refined strategy for generating random perturbations "
    "to enhance performance and carefully manage memory overhead using random seeds.Experiments across "
    "diverse tasks—including mathematical reasoning, coding abilities, dialogue generation, instruction "
    "following, and text-to-image generation—demonstrate that Flat-LoRA improves both in-domain and "
    "out-of-domain generalization.Code is available at https://github.com/nblt/Flat-LoRA."
)

MOH = (
    "In this work, we upgrade the multi-head attention mechanism, the core of the Transformer model, to "
    "reduce computational costs while maintaining or surpassing the previous accuracy level. We show that "
    "multi-head attention can be expressed in the summation form. Extensive experiments on ViT, DiT, and LLMs "
    "demonstrate that MoH outperforms multi-head attention by using only 50%$\\sim$90% of the attention heads. "
    "Moreover, we demonstrate that pre-trained multi-head attention models, such as LLaMA3-8B, can be further "
    "continue-tuned into our MoH models. Notably, MoH-LLaMA3-8B achieves an average accuracy of 64.0% across "
    "14 benchmarks, outperforming LLaMA3-8B by 2.4% by utilizing only 75% of the attention heads."
)

BANDITS = (
    "We first show that the optimal expected regret (against the best fixed-arm policy) is "
    "$\\tilde O(\\sqrt T)$, and can be achieved by a switchback policy. However, the regret (as a random "
    "variable) for any switchback policy suffers a high variance, since it does not account for $N$. We "
    "propose a policy based on a novel clustered randomization scheme, whose regret (i) is optimal in "
    "expectation and (ii) admits a high probability bound that vanishes in $N$."
)


# --- split_sentences ----------------------------------------------------------------------------


def test_flat_lora_missing_spaces_after_periods_are_sentence_breaks():
    sentences = split_sentences(FLAT_LORA)

    assert len(sentences) == 9
    assert sentences[3].endswith("potentially compromising generalization.")
    assert sentences[4] == (
        "We introduce Flat-LoRA, which aims to identify a low-rank adaptation situated in a flat region "
        "of the full parameter space."
    )
    assert sentences[5].startswith("Instead of adopting the well-established")
    assert sentences[6].endswith("using random seeds.")
    assert sentences[7].endswith("improves both in-domain and out-of-domain generalization.")
    # The URL and its final period stay in one piece.
    assert sentences[8] == "Code is available at https://github.com/nblt/Flat-LoRA."


def test_moh_percent_ranges_latex_and_decimals_stay_inside_sentences():
    sentences = split_sentences(MOH)

    assert len(sentences) == 5
    assert sentences[2] == (
        "Extensive experiments on ViT, DiT, and LLMs demonstrate that MoH outperforms multi-head attention "
        "by using only 50%$\\sim$90% of the attention heads."
    )
    assert "LLaMA3-8B, can be further continue-tuned" in sentences[3]
    assert sentences[4].startswith("Notably, MoH-LLaMA3-8B achieves an average accuracy of 64.0%")
    assert sentences[4].endswith("by 2.4% by utilizing only 75% of the attention heads.")


def test_latex_and_roman_enumerations_do_not_break_sentences():
    sentences = split_sentences(BANDITS)

    assert len(sentences) == 3
    assert "$\\tilde O(\\sqrt T)$, and can be achieved by a switchback policy." in sentences[0]
    # pysbd alone breaks before "(i)" and "(ii)"; they are rejoined.
    assert sentences[2].startswith("We propose a policy")
    assert sentences[2].endswith("(ii) admits a high probability bound that vanishes in $N$.")


def test_abbreviations_do_not_end_sentences():
    text = (
        "Adapters (e.g. LoRA, i.e. low-rank updates) were studied by Hu et al. in depth. "
        "Smith et al. show that it works. Results hold for 2.4% of cases."
    )

    assert split_sentences(text) == [
        "Adapters (e.g. LoRA, i.e. low-rank updates) were studied by Hu et al. in depth.",
        "Smith et al. show that it works.",
        "Results hold for 2.4% of cases.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "We use priors e.g.Gaussian ones in all runs.",
        "As shown by Hu et al.Their method is old.",
        "See https://example.org/docs/intro.Setup for details.",
        "Write to team@lab.Org for access.",
        "Version 2.Beta is the one we used.",
    ],
)
def test_glued_period_prepass_leaves_abbreviations_urls_and_numbers_alone(text):
    assert split_sentences(text) == [text]


def test_glued_period_prepass_splits_lowercase_word_period_capital():
    assert split_sentences("diverse 3D vehicle models.DragSolver tackles four challenges.") == [
        "diverse 3D vehicle models.",
        "DragSolver tackles four challenges.",
    ]


def test_hard_wrapped_abstract_lines_are_joined_into_sentences():
    text = (
        "We propose MeshUp, a technique that deforms a 3D mesh towards multiple\n"
        "target concepts, and intuitively controls the region where each concept is\n"
        "expressed. We can effectively control\nthe influence of the concepts."
    )

    assert split_sentences(text) == [
        "We propose MeshUp, a technique that deforms a 3D mesh towards multiple target concepts, "
        "and intuitively controls the region where each concept is expressed.",
        "We can effectively control the influence of the concepts.",
    ]


def test_markdown_blocks_always_separate_sentences():
    text = (
        "## Summary\n"
        "**Flat-LoRA**\n"
        "It finds flat minima\n"
        "- MoH uses fewer heads\n"
        "- ActionPiece tokenizes actions\n"
        "\n"
        "Both are recent"
    )

    assert split_sentences(text) == [
        "## Summary",
        "**Flat-LoRA**",
        "It finds flat minima",
        "- MoH uses fewer heads",
        "- ActionPiece tokenizes actions",
        "Both are recent",
    ]


def test_numbered_list_items_are_sentences():
    assert split_sentences("1. Flat-LoRA finds flat minima.\n2. MoH uses fewer heads.") == [
        "1. Flat-LoRA finds flat minima.",
        "2. MoH uses fewer heads.",
    ]


def test_empty_and_blank_text_have_no_sentences():
    assert split_sentences("") == []
    assert split_sentences("  \n\n \t ") == []


def test_sentence_spans_point_into_the_original_text():
    text = "  First sentence here.   Second one follows.\n\n- A bullet item."
    spans = sentence_spans(text)

    assert [text[s:e] for s, e in spans] == split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["First sentence here.", "Second one follows.", "- A bullet item."]


def test_memoised_result_is_not_shared_with_callers():
    first = split_sentences(MOH)
    first.append("mutated")

    assert split_sentences(MOH)[-1] != "mutated"
    assert len(split_sentences(MOH)) == 5


# --- tokenize_terms / lexical_similarity ---------------------------------------------------------


def test_terms_are_lowercase_stemmed_and_without_stop_words():
    terms = tokenize_terms("The Flat-LoRA models are improving generalization of LLMs in 2.4% cases.")

    assert terms == ["flat", "lora", "model", "improv", "general", "llms", "case"]


def test_stop_words_are_bm25s_english_list():
    from bm25s.stopwords import STOPWORDS_EN

    assert STOP_WORDS == frozenset(STOPWORDS_EN)
    assert "the" in STOP_WORDS and "attention" not in STOP_WORDS


@pytest.mark.parametrize("text", [FLAT_LORA, MOH, BANDITS, "It is what it is: a, b and c!"])
def test_terms_agree_with_the_bm25_tokenizer(text):
    expected = bm25s.tokenize(
        [text], stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False
    )[0]

    assert tokenize_terms(text) == expected


def test_lexical_similarity_bounds_and_symmetry():
    a = "Flat-LoRA improves generalization"
    b = "Flat-LoRA improves both in-domain and out-of-domain generalization."

    assert lexical_similarity(a, a) == pytest.approx(1.0)
    assert lexical_similarity(a, "Mixture of heads attention") == 0.0
    assert lexical_similarity(a, b) == pytest.approx(lexical_similarity(b, a))
    assert 0.0 < lexical_similarity(a, b) < 1.0


def test_lexical_similarity_matches_stems_and_ignores_stop_words():
    # {model, improv} vs {model, general}: 1 / sqrt(2 * 2)
    assert lexical_similarity("the models improve", "a model of generalization") == pytest.approx(0.5)
    assert lexical_similarity("improves generalization", "improved generalizations") == pytest.approx(1.0)
    assert lexical_similarity("it is the", "the it is") == 0.0
    assert lexical_similarity("", "anything at all") == 0.0


def test_term_words_are_the_bm25_terms_with_each_word_as_written():
    pairs = term_words(FLAT_LORA)
    assert [term for term, _ in pairs] == tokenize_terms(FLAT_LORA)
    assert ("lora", "LoRA") in pairs and ("bayesian", "Bayesian") in pairs
    assert term_words("the of and") == []


def test_a_full_width_stop_ends_a_sentence_with_its_closing_quote_and_citation():
    text = "MoH 把注意力头当作专家[1]。它说“只用一部分头。”[2]效果如何？好！"
    assert split_sentences(text) == ["MoH 把注意力头当作专家[1]。", "它说“只用一部分头。”[2]", "效果如何？", "好！"]
