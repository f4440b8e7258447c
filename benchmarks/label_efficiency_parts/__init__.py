"""The parts of benchmarks/label_efficiency.py (which runs them; its docstring has the method):

* ``sources`` — the items and the truth Σ₀ (``glove``, ``adult``);
* ``crowd`` — the response model, the simulated annotators and the yardstick;
* ``study`` — the study loop through the real sampler and refit, over processes;
* ``tables`` — the markdown summaries;
* ``noise`` — the noise-robustness study;
* ``plots`` — the HTML curves.

benchmarks/strategy_replica.py reuses the crowd, the yardstick and the tables.
"""
