"""Reading corpus files into `Paper` records (every format, uploads, validation with file:line) and
cutting them into the chunks the index embeds."""
