"""Text spaces: short texts embedded by the sentence model, batched and resumable.

``uploads`` (checked whole in the request, then queued), ``embedding`` (the worker's slices),
``sentence_model`` (the optional extra) and the upload page in ``views``.
"""
