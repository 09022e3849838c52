"""The corpus learns its decision from its reviewed traffic (issue 35 item 2): the admin
routes that run `evaluation/from_review.py` in the background, and the wiring that hands
the stored fit in force (`fit_store`) to the Decider on every replica."""
