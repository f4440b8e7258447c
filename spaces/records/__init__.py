"""Record spaces: a table's rows are the items, their vectors φ(records).

``featuremap`` (φ as plain JSON: build, apply, validate, the download's bytes), ``columns``
(roles guessed, column order, the columns annotators see), ``create`` (``record_space_create``),
``uploads`` (store, choose the columns, finish) and the pages in ``views``.
"""
