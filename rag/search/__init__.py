"""Finding the papers a question is about: dense and BM25 search fused, filtered, grouped by paper,
and reranked by the verifier where that is turned on."""
