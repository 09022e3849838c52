"""The research lab: instruments that measure the service, run as `python -m lab <command>`.

BEIR `eval`, `eval-kinds`, `bench`, `load`, `adapt-model` and the experiment
scripts (lab/experiments/), with their results (lab/results/). The lab imports
the service; the service never imports the lab (pyproject.toml's import-linter
contract), so none of this ships in what serves and operates it.
"""
