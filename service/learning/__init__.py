"""The corpus learns its decision from its reviewed traffic (issue 35 item 2): the wiring that
hands the stored fit in force (`fit_store`) to the Decider on every replica. Its admin routes,
which run `evaluation/from_review.py` as a job, are in `service/api/decision_fits.py`."""
