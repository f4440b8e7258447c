"""Vector spaces: embedding files read with bounds, validated as they stream, stored as a space.

``formats`` (the formats, ``Block``, limits) < ``bounded`` (bounded files, UTF-8) < ``parsers``
(one per format family) < ``reader`` (``EmbeddingReader``: detect, iterate, validate) <
``importing`` (``space_import``) < ``uploads`` (browser uploads and the task's body) < ``views``.
"""
