"""Adjudication: the pairs annotators disagree about, most uncertain under the study's current
metric first; a reviewer's decision on a pair (``Adjudication``), which the fit reads in place of
the pair's raw answers (``fit.py``); the review page and its API."""
