"""One-off experiments and measurements, each run as `python -m lab.experiments.<name>`."""
