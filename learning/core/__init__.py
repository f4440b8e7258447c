"""The numerical core of fairmetric: FACE, EXPLORE, WEAT, drift and PSD helpers.

numpy/scipy only — no Django import (an import-linter contract enforces it). Details, rules and
benchmark figures: docs/core.md.
"""

from .drift import DriftResult, drift
from .explore import EXPLORE, ExploreShortfall, explore_shortfall
from .face import FACE
from .weat import WeatOutcome, bootstrap_effect_size_ci, effect_size_ci, weat, weat_suite

__all__ = [
    "EXPLORE",
    "ExploreShortfall",
    "FACE",
    "DriftResult",
    "WeatOutcome",
    "bootstrap_effect_size_ci",
    "effect_size_ci",
    "drift",
    "explore_shortfall",
    "weat",
    "weat_suite",
]
