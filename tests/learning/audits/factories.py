"""A done model audit to show (security matrix, every-page check)."""

from __future__ import annotations

from annotation.models import Study
from learning.models import AuditViolation, MetricVersion, ModelAudit
from spaces.models import Item


def audit_create_done(study: Study, version: MetricVersion, items: list[Item]) -> ModelAudit:
    """A done model audit of ``study`` (named "matrix") with one violation, for the audit rows."""
    audit = ModelAudit.objects.create(
        study=study,
        version=version,
        name="matrix",
        k=3,
        predictions="audits/matrix/predictions.npz",
        item_count=20,
        status=ModelAudit.Status.DONE,
        summary={"epsilon": 1.0, "lipschitz": 1.0, "sigma": {}, "euclidean": {}},
        violation_count=1,
    )
    a, b = items[2], items[3]
    AuditViolation.objects.create(
        audit=audit,
        rank=1,
        item_a=a,
        item_b=b,
        key_a=a.key,
        key_b=b.key,
        distance=0.1,
        euclidean=0.2,
        score_a=0.1,
        score_b=0.9,
        gap=0.7,
        needed=8.0,
    )
    return audit
