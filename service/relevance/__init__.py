"""The relevance model: a small cross-encoder scoring (question, section) pairs
(issue 41; trained by `python -m lab train-relevance`, docs/quality/relevance-model.md)."""
