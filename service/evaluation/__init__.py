"""`python -m service eval`: retrieval quality on a BEIR-layout test collection."""
