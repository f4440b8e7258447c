"""Template filters for the metric pages."""

from django import template

register = template.Library()


@register.filter
def pvalue(value, partitions=None) -> str:
    """A p-value readable at every scale: 0.045, 0.002, 8.0e-05; a sampled p of 0 is below
    the resolution 1/partitions (``{{ r.p_value|pvalue:r.n_partitions }}`` → <2e-05)."""
    if value is None:
        return "—"
    value = float(value)
    if value == 0 and partitions:
        return f"<{1 / int(partitions):.0e}"
    return f"{value:.1e}" if value < 0.001 else f"{value:.3f}"
