"""Labelling pairs: annotators answer "comparable?" about one pair at a time.

``services`` (store an answer, a batch of answers, undo), ``skips`` (skip a pair, comment on
it), the next pair: ``sampling`` (overlap, gold, candidate pairs, then the study's strategy,
``strategies``) and ``pair_queue`` (each annotator's pairs chosen in bulk, cached); ``selectors``
(answered, gold and skipped pairs), ``throttles`` (the answers' rate limit), ``api`` with
``serializers`` (the endpoints behind the labelling page, ``templates/annotation/label.html``).
"""
