"""The WEAT tests of a study over the API (the same checks and writes as its WEAT pages,
``learning.evaluation.weat_tests``):

* ``GET /api/studies/{id}/weat-tests/`` — every test attached to the study (reviewers, admins);
  ``editable`` says whether it is one of the study's own (shared suites are staff's);
* ``POST`` — a new test (the study's admins): ``name``, ``kind``, the four set names and word
  lists → 201 with the test and ``unknown_words`` (dropped, per set); its results are computed
  in the worker. Bad input (a set with too few words of the space, a word in two sets, a name
  in use) → 400 ``{"detail": …}``, nothing written;
* ``GET`` / ``DELETE /api/studies/{id}/weat-tests/{tid}/`` — one test; delete (admins, own tests).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import Action, StudyAccess, require
from annotation.models import Study
from common.errors import NotFound
from learning.evaluation import weat_tests
from learning.evaluation.weat import SETS
from learning.models import WeatTest

REFUSED = "Only reviewers and admins of this study can see its WEAT tests."


class WeatTestSerializer(serializers.ModelSerializer):
    suite = serializers.CharField(source="suite.name", read_only=True)
    editable = serializers.SerializerMethodField()

    class Meta:
        model = WeatTest
        fields = [
            "id",
            "name",
            "kind",
            "suite",
            "editable",
            *weat_tests.NAME_FIELDS,
            *SETS,
        ]

    def get_editable(self, test) -> bool:
        return test.suite.owner_study_id == self.context["study"].pk


class WeatTestCreateSerializer(serializers.Serializer):
    """The request body of a new test (checked by ``weat_tests.weat_draft``)."""

    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=WeatTest.Kind.choices)
    x_name = serializers.CharField(max_length=100, default="X")
    y_name = serializers.CharField(max_length=100, default="Y")
    a_name = serializers.CharField(max_length=100, default="A")
    b_name = serializers.CharField(max_length=100, default="B")
    x_words = serializers.ListField(child=serializers.CharField(max_length=255), max_length=100)
    y_words = serializers.ListField(child=serializers.CharField(max_length=255), max_length=100)
    a_words = serializers.ListField(child=serializers.CharField(max_length=255), max_length=100)
    b_words = serializers.ListField(child=serializers.CharField(max_length=255), max_length=100)


class WeatCreatedSerializer(WeatTestSerializer):
    unknown_words = serializers.DictField(child=serializers.ListField(), read_only=True)

    class Meta(WeatTestSerializer.Meta):
        fields = [*WeatTestSerializer.Meta.fields, "unknown_words"]


class WeatView(APIView):
    permission_classes = [StudyAccess]  # the study is self.study
    study_action = Action.REVIEW
    study_refused = REFUSED
    study: Study

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        weat_tests.require_weat(self.study)

    def context(self) -> dict:
        return {"study": self.study}


class WeatTestList(WeatView):
    @extend_schema(summary="The study's WEAT tests", responses=WeatTestSerializer(many=True))
    def get(self, request, study_id: int):
        tests = weat_tests.study_tests(self.study).select_related("suite").order_by("pk")
        return Response(WeatTestSerializer(tests, many=True, context=self.context()).data)

    @extend_schema(
        summary="Define a WEAT test (its results are computed in the worker)",
        request=WeatTestCreateSerializer,
        responses={201: WeatCreatedSerializer},
    )
    def post(self, request, study_id: int):
        body = WeatTestCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        require(request.user, self.study, Action.MANAGE, weat_tests.MANAGE_REFUSED)
        draft = weat_tests.weat_draft(
            study=self.study,
            name=data["name"],
            kind=data["kind"],
            names={f: data[f] for f in weat_tests.NAME_FIELDS},
            words={s: data[s] for s in SETS},
        )
        test = weat_tests.weat_test_save(user=request.user, study=self.study, draft=draft)
        out = WeatTestSerializer(test, context=self.context()).data
        out["unknown_words"] = draft.unknown
        return Response(out, status=201)


class WeatTestDetail(WeatView):
    @extend_schema(summary="One WEAT test of the study", responses=WeatTestSerializer)
    def get(self, request, study_id: int, test_id: int):
        test = weat_tests.study_tests(self.study).select_related("suite").filter(pk=test_id).first()
        if test is None:
            raise NotFound("No such WEAT test in this study.")
        return Response(WeatTestSerializer(test, context=self.context()).data)

    @extend_schema(summary="Delete one of the study's own WEAT tests", responses={204: None})
    def delete(self, request, study_id: int, test_id: int):
        weat_tests.weat_test_delete(user=request.user, study=self.study, test_id=test_id)
        return Response(status=204)
