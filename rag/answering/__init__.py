"""The step from retrieved abstracts to an answer: evidence, answerability, the answer forms, the
backends that write them, citation checks, and the chain (`Assistant`) that runs it all."""
