"""The answer forms the extractive backend writes, and which one a question gets (`choice`):
quotes, a correction of a premise, a collection, a comparison table, a summary, a decline."""
