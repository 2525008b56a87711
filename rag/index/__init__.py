"""The index on disk: the Chroma collection of chunks, the catalog and BM25 beside it, the
sentence and word vectors, the embedding model and its offline files, the corpus map."""
