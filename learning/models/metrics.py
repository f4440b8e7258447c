"""What is learned: metric versions (Sigma), WEAT suites and their results, a study's learning
settings and refit state."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotation.models import Study
from spaces.models import EmbeddingSpace


class VersionStatus(models.TextChoices):
    FITTING = "fitting", "fitting"
    READY = "ready", "ready"
    FAILED = "failed", "failed"


class MetricVersionQuerySet(models.QuerySet):
    def ready(self) -> MetricVersionQuerySet:
        """Fitted versions with their Sigma on disk."""
        return self.filter(status=MetricVersion.Status.READY).exclude(sigma="")

    def published(self) -> MetricVersionQuerySet:
        return self.filter(is_published=True)

    def pooled(self) -> MetricVersionQuerySet:
        """The study's own fits from every answer (not a cohort's: ``MetricVersion.cohort``)."""
        return self.filter(cohort="")


class MetricVersion(models.Model):
    class Method(models.TextChoices):
        FACE = "face", "FACE"
        EXPLORE = "explore", "EXPLORE"

    Status = VersionStatus

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="metric_versions")
    method = models.CharField(max_length=10, choices=Method.choices)
    label = models.CharField(
        max_length=50, blank=True, help_text="Short name for tables, e.g. face-10."
    )
    parameters = models.JSONField(default=dict, blank=True)
    sigma = models.FileField(upload_to="sigmas/", max_length=500, blank=True)
    sigma_sha256 = models.CharField(max_length=64, blank=True)
    dimension = models.PositiveIntegerField(null=True, blank=True)
    judgment_watermark = models.BigIntegerField(
        default=0, help_text="Highest judgment id included in the fit."
    )
    group_watermark = models.BigIntegerField(
        default=0, help_text="Study group revision included in the fit."
    )
    fingerprint = models.CharField(
        max_length=32,
        blank=True,
        help_text="Hash of the fit's settings and data counts: same watermark and fingerprint "
        "means same input, so a refit is skipped.",
    )
    counts = models.JSONField(default=dict, blank=True)
    diagnostics = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.FITTING)
    error = models.TextField(blank=True)
    transient = models.BooleanField(
        default=False,
        help_text="Failed for a passing reason (worker lost, database down): refitted later.",
    )
    fit_seconds = models.FloatField(null=True, blank=True)
    informative = models.BooleanField(
        default=False,
        help_text="verdict == informative: predicts the answers of new people better than the "
        "constant rate (learning/evaluation/informative.py); else never the study's current "
        "metric.",
    )
    verdict = models.CharField(
        max_length=20,
        blank=True,
        default="",
        help_text="informative, not informative or cannot tell yet, on new items "
        '(diagnostics["validity"]); blank: never judged.',
    )
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children"
    )
    is_published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty when published automatically.",
    )
    cohort = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="Empty: fitted on every answer (the study's own). Else a cohort's fit: "
        "'<attribute>=<value>' (that value's members) or '<attribute>:equal' (every cohort "
        "counting equally); its make-up in parameters['cohort'] (learning/cohorts/). Never "
        "the study's latest or current version unless published.",
    )
    publish_override = models.JSONField(
        null=True,
        blank=True,
        help_text="Published although its verdict was not informative: {reason, by, at} "
        "(learning/versions/validity.py); null otherwise.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MetricVersionQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "method"],
                condition=Q(is_published=True),
                name="one_published_version_per_study_method",
            ),
            # A redelivered refit cannot add a second live version for the same data.
            models.UniqueConstraint(
                fields=["study", "method", "judgment_watermark", "group_watermark", "fingerprint"],
                condition=Q(status__in=[VersionStatus.FITTING, VersionStatus.READY]),
                name="one_live_version_per_watermark",
            ),
        ]
        indexes = [models.Index(fields=["study", "method", "status", "id"], name="mv_lookup")]

    def __str__(self) -> str:
        return f"{self.study} {self.label or self.method} #{self.pk}"


class WeatSuite(models.Model):
    """A named set of WEAT tests, attached to studies whose metrics it evaluates."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    provenance = models.TextField(blank=True)
    studies = models.ManyToManyField(Study, blank=True, related_name="weat_suites")
    owner_study = models.OneToOneField(
        Study,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="own_weat_suite",
        help_text="The study whose admins define these tests on its WEAT pages (empty: a "
        "shared suite, such as Caliskan's, attached by staff).",
    )

    def __str__(self) -> str:
        return self.name


class WeatTest(models.Model):
    class Kind(models.TextChoices):
        MEANINGFUL = "meaningful", "meaningful association"
        UNFAIR = "unfair", "unfair association"

    suite = models.ForeignKey(WeatSuite, on_delete=models.CASCADE, related_name="tests")
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=200, help_text="<first target> / <first attribute>")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    x_name = models.CharField(max_length=100)
    y_name = models.CharField(max_length=100)
    a_name = models.CharField(max_length=100)
    b_name = models.CharField(max_length=100)
    x_words = models.JSONField(default=list)
    y_words = models.JSONField(default=list)
    a_words = models.JSONField(default=list)
    b_words = models.JSONField(default=list)

    class Meta:
        ordering = ["suite", "position"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "name"], name="weat_test_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class WeatResult(models.Model):
    """One test under one metric: a learned version, or the Euclidean baseline of a space."""

    test = models.ForeignKey(WeatTest, on_delete=models.CASCADE, related_name="results")
    space = models.ForeignKey(EmbeddingSpace, on_delete=models.CASCADE, related_name="+")
    metric_version = models.ForeignKey(
        MetricVersion,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="weat_results",
        help_text="Empty for the Euclidean baseline.",
    )
    metric = models.CharField(max_length=50, help_text="euclidean, explore, face-<k>")
    p_value = models.FloatField()
    effect_size = models.FloatField()
    statistic = models.FloatField()
    n_partitions = models.BigIntegerField()
    exact = models.BooleanField()
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    scores = models.JSONField(default=dict, blank=True, help_text="s(w) per target word.")
    missing_words = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["test", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["test", "space"],
                condition=Q(metric_version__isnull=True),
                name="one_euclidean_result_per_test_space",
            ),
            models.UniqueConstraint(
                fields=["test", "metric_version"],
                condition=Q(metric_version__isnull=False),
                name="one_result_per_test_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.test} under {self.metric}"


class StudyLearningSettings(models.Model):
    """How a study's feedback becomes metric versions (one row per study, edited by admins)."""

    class RepeatPolicy(models.TextChoices):
        ALL = "all", "all answers as observations (unsure counts half each way)"
        MAJORITY = "majority", "majority vote per pair (ties and unsure dropped)"
        DROP_UNSURE = "drop_unsure", "all comparable/incomparable answers, unsure dropped"

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="learning_settings")
    fit_explore = models.BooleanField(default=True, help_text="Fit EXPLORE from labelled pairs.")
    fit_face = models.BooleanField(
        default=True, help_text="Fit FACE from groups (and comparable pairs as groups of two)."
    )
    debounce_seconds = models.PositiveSmallIntegerField(
        default=3,
        validators=[MaxValueValidator(60)],
        help_text="A burst of answers within this window is fitted once, at its end.",
    )
    repeat_policy = models.CharField(
        max_length=12, choices=RepeatPolicy.choices, default=RepeatPolicy.ALL
    )
    excluded_annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="+",
        help_text="Flagged annotators whose answers are left out of every fit.",
    )
    face_components = models.PositiveSmallIntegerField(
        null=True, blank=True, default=3, help_text="FACE k; empty chooses k automatically."
    )
    face_pairs_as_groups = models.BooleanField(
        default=True, help_text="Also use pairs judged comparable as FACE groups of two."
    )
    explore_max_eigenvalue = models.FloatField(
        null=True,
        blank=True,
        default=None,
        validators=[MinValueValidator(1e-6)],
        help_text="Bound on Sigma's spectrum; empty: none (EXPLORE's penalty keeps separable "
        "data finite, docs/core.md).",
    )
    weight_by_reliability = models.BooleanField(
        default=True,
        help_text="Weight answers by annotator reliability: EXPLORE jointly estimates each "
        "annotator's flip rate (EM, using overlap and gold pairs) and discounts noisy answers.",
    )
    validation_share = models.FloatField(
        default=0.2,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.5)],
        help_text="Share of pairs held out (fixed by a hash of the pair) for diagnostics.",
    )
    version_min_new_answers = models.PositiveIntegerField(
        default=10,
        help_text="A method's next version needs at least this many new answers since its last "
        "version, or the wait below (changed settings and groups always refit).",
    )
    version_min_minutes = models.PositiveIntegerField(
        default=5,
        help_text="… or this many minutes since its last version (then any new answer counts).",
    )
    drift_alarm_rate = models.FloatField(
        default=0.05,
        validators=[MinValueValidator(1e-6), MaxValueValidator(0.2)],
        help_text="Drift sensitivity: the chance that a study whose annotators never change "
        "their rule gets a drift flag at all, over its whole life (all its versions' checks "
        "together: learning/versions/drift.py). Larger: more sensitive, more false alarms.",
    )
    auto_publish = models.BooleanField(
        default=False, help_text="Publish each ready version that passes the checks below."
    )
    auto_publish_min_auc = models.FloatField(
        null=True,
        blank=True,
        default=0.6,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Held-out AUC a version needs (EXPLORE, and FACE when pairs are labelled).",
    )
    auto_publish_require_converged = models.BooleanField(default=True)
    auto_publish_block_on_drift = models.BooleanField(
        default=True, help_text="Refuse versions whose drift from the published one is flagged."
    )

    class Meta:
        verbose_name = "study learning settings"
        verbose_name_plural = "study learning settings"

    def __str__(self) -> str:
        return f"learning settings of {self.study}"


class RefitState(models.Model):
    """Coordination of a study's refits, kept apart from the settings admins edit.

    ``due_at`` marks a queued refit (set by ``refit_request``, cleared when the task starts):
    answers arriving while it is set ride along. ``lease_*`` is the claim that lets one refit
    run per study at a time; a running refit renews it, a killed one lets it expire.
    """

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="refit_state")
    due_at = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_outcome = models.CharField(max_length=500, blank=True)

    def __str__(self) -> str:
        return f"refit state of study {self.study_id}"
