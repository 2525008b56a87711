"""Measuring answer quality: question sets, support judges, the metrics, one evaluation run and its
report, and each question's outcome."""
