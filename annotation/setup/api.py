"""The set-up API: what the set-up pages do, over JSON, through the same services and the same
form rules. ``POST /api/studies/`` (staff) creates a study — name, space and mode, the rest as on
the page (``NEW_STUDY_DEFAULTS``) — and makes the caller its admin; ``PATCH /api/studies/<id>/``
changes settings (the study's admins); then the pool, candidate and gold pairs, members and
invitations. Errors: 400 with the reason, 403/404 by the access rule, 409 for a taken name or
an existing member; nothing is written on error."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation.access import Action, require_unscoped, study_role
from annotation.api import AnnotationAPIView, StudyDetail, StudyList
from annotation.models import MAX_TARGET, Membership, Study
from annotation.serializers import MAX_ID, StudySerializer, TextField
from annotation.setup import members, pairs, pool, studies
from annotation.setup.cohorts import services as cohorts
from annotation.setup.files import PairRow
from annotation.setup.forms import StudyForm
from common.access import require_staff

MAX_ROWS = 20_000  # keys or pairs in one request (larger lists: the pages' file upload)
SETUP_BODY_BYTES = 2 * 1024 * 1024


class StudyWrite(serializers.Serializer):
    """The settings a client may send (all optional on PATCH; name and space needed to create)."""

    name = TextField(max_length=200, required=False)
    space = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    mode = serializers.ChoiceField(Study.Mode.choices, required=False)
    instructions = TextField(max_length=20_000, required=False, allow_blank=True)
    pool = serializers.ChoiceField(Study.Pool.choices, required=False)
    tags = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=200,
    )
    strategy = serializers.ChoiceField(Study.Strategy.choices, required=False)
    overlap = serializers.IntegerField(required=False)  # bounds: StudyForm, one message
    gold_rate = serializers.FloatField(required=False)
    candidate_rate = serializers.FloatField(required=False)
    target_per_annotator = serializers.IntegerField(required=False)
    stop_at_target = serializers.BooleanField(required=False)
    is_active = serializers.BooleanField(required=False)


def _form_data(study: Study | None, sent: dict) -> dict:
    """The form's data: what was sent over the study's settings (or the new-study defaults)."""
    if study is None:
        data = dict(studies.NEW_STUDY_DEFAULTS)
        tags = []
    else:
        data = {f: getattr(study, f) for f in studies.STUDY_FIELDS if f != "space"}
        data["space"] = study.space_id
        tags = list(study.pool_tags.values_list("pk", flat=True))
        if data["pool"] == Study.Pool.TAGS and not tags:
            data["pool"] = Study.Pool.ALL  # "tags" without tags means every item (pool_queryset)
    data |= {"tags": tags} | sent
    return {k: v for k, v in data.items() if v is not None}


def _saved(request, study: Study | None, sent: dict) -> Study:
    form = StudyForm(data=_form_data(study, sent), user=request.user, instance=study)
    if not form.is_valid():
        raise ValidationError(
            {field: [str(e) for e in errors] for field, errors in form.errors.items()}
        )
    return studies.study_save(user=request.user, data=form.cleaned_data, study=study)


class StudyListCreate(StudyList):
    max_body_bytes = 64 * 1024

    @extend_schema(request=StudyWrite, responses={201: StudySerializer})
    def post(self, request):
        require_staff(request.user, "Only staff create studies.")
        require_unscoped(request.user, "A token limited to studies cannot create one.")
        sent = _validated(StudyWrite, request.data)
        missing = [f for f in ("name", "space") if f not in sent]
        if missing:
            raise ValidationError({f: ["This field is required."] for f in missing})
        study = _saved(request, None, sent)
        body = StudySerializer(study, context={"roles": {study.pk: "admin"}}).data
        return Response(body, status=status.HTTP_201_CREATED)


class StudySettings(StudyDetail):
    max_body_bytes = 64 * 1024

    @property
    def study_action(self) -> str:  # read by StudyAccess: members read, admins change
        return Action.MANAGE if self.request.method == "PATCH" else Action.VIEW

    study_refused = "Only an admin of the study can change it."

    @extend_schema(request=StudyWrite, responses=StudySerializer)
    def patch(self, request, study_id: int):
        sent = _validated(StudyWrite, request.data)
        study = _saved(request, self.study, sent)
        roles = {study.pk: study_role(request.user, study)}
        return Response(StudySerializer(study, context={"roles": roles}).data)


def _validated(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class SetupView(AnnotationAPIView):
    """A study set-up endpoint: admins of the study (and staff); reviewers and annotators 403."""

    study_action = Action.MANAGE
    study_refused = "Only an admin of the study can change its set-up."
    max_body_bytes = SETUP_BODY_BYTES


def key_field() -> serializers.CharField:
    return serializers.CharField(max_length=255, trim_whitespace=True)


class PoolWrite(serializers.Serializer):
    keys = serializers.ListField(child=key_field(), min_length=1, max_length=MAX_ROWS)
    replace = serializers.BooleanField(default=False)


Counts = inline_serializer("SetupCounts", {"keys": serializers.IntegerField()})


class PoolUpload(SetupView):
    @extend_schema(request=PoolWrite, responses=Counts)
    def post(self, request, study_id: int):
        sent = _validated(PoolWrite, request.data)
        done = pool.pool_upload(
            user=request.user, study=self.study, keys=sent["keys"], replace=sent["replace"]
        )
        return Response(done)


class PairsWrite(serializers.Serializer):
    pairs = serializers.ListField(
        child=serializers.ListField(child=key_field()),  # lengths: _rows, with the pair's number
        min_length=1,
        max_length=MAX_ROWS,
        help_text='[["key a", "key b"], …]; gold pairs add a label: comparable or incomparable.',
    )


def _rows(sent: dict, *, labelled: bool) -> list[PairRow]:
    rows = []
    for line, pair in enumerate(sent["pairs"], start=1):
        if len(pair) != (3 if labelled else 2):
            need = "two keys and a label" if labelled else "two keys"
            raise ValidationError({"pairs": [f"pair {line}: expected {need}."]})
        rows.append(PairRow(line, pair[0], pair[1], pair[2].lower() if labelled else ""))
    return rows


class CandidatePairsUpload(SetupView):
    @extend_schema(request=PairsWrite, responses=Counts)
    def post(self, request, study_id: int):
        rows = _rows(_validated(PairsWrite, request.data), labelled=False)
        return Response(
            pairs.candidate_pairs_upload(user=request.user, study=self.study, rows=rows)
        )


class GoldPairsUpload(SetupView):
    @extend_schema(request=PairsWrite, responses=Counts)
    def post(self, request, study_id: int):
        rows = _rows(_validated(PairsWrite, request.data), labelled=True)
        return Response(pairs.gold_pairs_upload(user=request.user, study=self.study, rows=rows))


class MemberWrite(serializers.Serializer):
    user = TextField(max_length=254, required=False, help_text="An existing username or e-mail.")
    username = TextField(max_length=150, required=False, help_text="To invite: a new account.")
    email = serializers.EmailField(required=False, help_text="To invite: where the link goes.")
    role = serializers.ChoiceField(Membership.Role.choices, default=Membership.Role.ANNOTATOR)
    target = serializers.IntegerField(required=False, min_value=1, max_value=MAX_TARGET)
    attributes = serializers.DictField(
        child=TextField(max_length=100, allow_blank=True, allow_null=True),
        required=False,
        help_text='The member\'s values of the study\'s member attributes: {"region": "EU"}.',
    )


class MemberRead(serializers.ModelSerializer):
    """A member as the study's admins see it (the only readers of ``attributes``)."""

    username = serializers.CharField(source="user.username")

    class Meta:
        model = Membership
        fields = ["id", "username", "role", "target", "attributes"]


class MemberAdd(SetupView):
    """``user``: add an existing person; otherwise ``username``/``email``: invite (the answer
    holds the one-time link that sets their password; it is e-mailed when an address is given)."""

    @extend_schema(request=MemberWrite, responses={201: MemberRead})
    def post(self, request, study_id: int):
        sent = _validated(MemberWrite, request.data)
        with transaction.atomic():  # the member and their attributes, or nothing
            return self._add(request, sent)

    def _add(self, request, sent: dict) -> Response:
        common = {"user": request.user, "study": self.study, "role": sent["role"]}
        attributes = sent.get("attributes")
        if attributes:
            cohorts.attributes_checked(self.study.pk, attributes)  # 400 before anything
        if sent.get("user"):
            membership = members.member_add(who=sent["user"], target=sent.get("target"), **common)
            if attributes:
                membership = cohorts.member_attributes_set(
                    user=request.user, membership=membership, attributes=attributes
                )
            return Response(MemberRead(membership).data, status=status.HTTP_201_CREATED)
        if not (sent.get("username") or sent.get("email")):
            raise ValidationError(
                {"user": ["Give a user to add, or a username or e-mail to invite."]}
            )
        invitation = members.member_invite(
            username=sent.get("username", ""),
            email=sent.get("email", ""),
            target=sent.get("target"),
            link_for=lambda uid, token: request.build_absolute_uri(
                reverse("accounts:invitation", args=[uid, token])
            ),
            **common,
        )
        if attributes:
            cohorts.member_attributes_set(
                user=request.user, membership=invitation.membership, attributes=attributes
            )
        body = MemberRead(invitation.membership).data | {
            "invitation": invitation.path,  # the absolute one-time link
            "emailed": invitation.emailed,
        }
        return Response(body, status=status.HTTP_201_CREATED)
