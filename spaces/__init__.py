"""Embedding spaces: the items annotators compare, each with a vector.

One subpackage per kind of space, each with its upload, its pages and its forms:

* ``vectors/``: embedding files (word2vec, GloVe, word2vec binary, ``.npy``, CSV) read with
  bounds and validated as they stream (``reader``, ``parsers``, ``bounded``, ``formats``), imported
  as a space (``importing``; the ``import_embeddings`` command) or uploaded (``uploads``);
* ``records/``: tables whose rows are the items, embedded by a declared feature map φ
  (``featuremap``, ``create``, ``columns``, ``uploads``);
* ``texts/``: short texts embedded by a sentence model in the worker, in resumable slices
  (``uploads``, ``embedding``, ``sentence_model``).

At the root, what every kind shares: the models, ``services`` (a space from a matrix, items,
tags), ``uploads`` (the steps every upload shares), ``tables`` (reading CSV/Parquet/JSONL),
``views`` (the list, an import's progress, the upload page steps), ``forms``, ``exceptions``,
``tasks`` (the Celery tasks, by their unchanged names) and ``urls``. The kinds import the root,
never each other.
"""
