"""What a question asks: cleaned, typed, its stated filters, its key terms, the papers it names,
a follow-up made standalone, and the example questions the first screen offers."""
