"""EXPLORE's data kept between fits: pair differences extended by new pairs
(``differences``). Used by ``learning/core/explore.py`` and its private modules."""
