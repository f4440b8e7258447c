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


@register.filter
def figure(value, percent=False) -> str:
    """An audit figure ``{"estimate", "low", "high"}`` as "12.3 % (11.8–12.9)" (``percent``) or
    "0.123 (0.118–0.129)"; "—" when undefined."""
    if not isinstance(value, dict) or value.get("estimate") is None:
        return "—"

    def fmt(x) -> str:
        if x is None:
            return "?"
        return f"{100 * x:.1f}" if percent else f"{x:.3f}"

    unit = " %" if percent else ""
    if value.get("low") is None:
        return f"{fmt(value['estimate'])}{unit}"
    return f"{fmt(value['estimate'])}{unit} ({fmt(value['low'])}–{fmt(value['high'])})"


@register.filter
def share(value) -> str:
    """A field's share of d_Σ² as a percentage, "" when none."""
    return "" if value is None else f"{100 * float(value):.0f} %"
