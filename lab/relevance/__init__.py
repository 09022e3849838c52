"""The relevance model (issue 41): pairs mined from the training pool, a cross-encoder
trained on them, and its measurement on the labelled sets (`python -m lab train-relevance`)."""
