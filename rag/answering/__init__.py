"""The step from retrieved abstracts to an answer: question, evidence, answerability, answer forms."""
