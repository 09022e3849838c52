"""`eval-decisions` / `fit-decisions`: an operator's labelled set through the service's decisions."""
