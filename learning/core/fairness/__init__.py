"""Audit figures beyond the neighbour graph (numpy only): counterfactual twins
(:mod:`.counterfactual`) and the violation rate over L and over uniformly sampled pairs
(:mod:`.curves`). The neighbour figures themselves: :mod:`learning.core.audit`."""
