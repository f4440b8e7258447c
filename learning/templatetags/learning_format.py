"""Template filters for the metric pages."""

from django import template

register = template.Library()


@register.filter
def pvalue(value) -> str:
    """A p-value readable at every scale: 0.045, 0.002, 8.0e-05."""
    if value is None:
        return "—"
    value = float(value)
    return f"{value:.1e}" if value < 0.001 else f"{value:.3f}"
