"""The API of the labelling page: the next pair, answers (one or a batch, with the next pair),
undo, the annotator's answers, skips and comments."""

from __future__ import annotations

import uuid

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation import selectors
from annotation.api import AnnotationAPIView, id_list, int_param
from annotation.labelling import pair_queue, services, skips
from annotation.labelling.serializers import (
    CommentCreateSerializer,
    JudgmentBatchResponseSerializer,
    JudgmentBatchSerializer,
    JudgmentCreateSerializer,
    JudgmentSerializer,
    NextPairSerializer,
    PairSerializer,
    judgment_data,
)
from annotation.labelling.throttles import JudgmentRateThrottle
from annotation.models import Study
from annotation.serializers import error_text
from spaces.models import attach_spaces

MAX_LIMIT = 200


def _held_pairs(request) -> list[tuple[int, int]]:
    held = id_list(request.query_params.get("exclude", ""), "exclude", max_len=40)
    if len(held) % 2:
        raise ValidationError({"exclude": "must list pairs of item ids: 'a-b,c-d'."})
    return list(zip(held[::2], held[1::2], strict=True))


def _next_pair_data(request, study: Study, held_pairs=None, answered=()) -> dict:
    """The next-pair answer (``done``, ``left``, ``right``) for the requesting annotator, from
    the annotator's queue (``pair_queue.py``); ``answered``: pairs just stored."""
    if held_pairs is None:
        held_pairs = _held_pairs(request)
    pair = None
    if study.stop_at_target and selectors.progress_for(study=study, user=request.user).complete:
        return {"done": True, "complete": True, "left": None, "right": None, "order": None}
    if study.is_active and study.mode != Study.Mode.GROUPS:  # else it takes no pairs
        pair = pair_queue.pair_take(
            study=study, user=request.user, exclude=[*held_pairs, *answered]
        )
    if pair is None:
        return {"done": True, "complete": False, "left": None, "right": None, "order": None}
    order = list(pair.order)
    return {
        "done": False,
        "complete": False,
        "left": pair.left,
        "right": pair.right,
        "order": order,
    }


class NextPairView(AnnotationAPIView):
    study_cached = True

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "exclude", str, description="Pairs the client holds unsent: 'a-b,c-d'."
            )
        ],
        responses=NextPairSerializer,
    )
    def get(self, request, study_id: int):
        study = self.study
        return Response(_next_pair_data(request, study))


class JudgmentListCreate(AnnotationAPIView):
    study_cached = True

    def get_throttles(self):
        return [JudgmentRateThrottle()] if self.request.method == "POST" else []

    @extend_schema(
        parameters=[
            OpenApiParameter("mine", bool, description="Only your own answers."),
            OpenApiParameter("limit", int, description=f"At most {MAX_LIMIT} (default 10)."),
            OpenApiParameter("before", int, description="Only judgments with a smaller id."),
        ],
        responses=JudgmentSerializer(many=True),
    )
    def get(self, request, study_id: int):
        study = self.study
        mine = request.query_params.get("mine", "") in {"1", "true", "yes"}
        limit = int_param(request, "limit", 10, lo=1, hi=MAX_LIMIT)
        before = int_param(request, "before", 0, lo=0, hi=2**62) or None
        rows = selectors.judgments_recent(
            study=study, user=request.user, mine=mine, limit=limit, before_id=before
        )
        return Response({"results": JudgmentSerializer(rows, many=True).data})

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "next",
                bool,
                description="Also answer the annotator's next pair (`next_pair`, as next-pair "
                "gives it), chosen after the answer is stored: one request per judgment.",
            ),
            OpenApiParameter(
                "exclude", str, description="With next=1: pairs the client holds unsent."
            ),
        ],
        request=JudgmentCreateSerializer,
        responses=JudgmentSerializer,
    )
    def post(self, request, study_id: int):
        study = self.study
        want_next = request.query_params.get("next", "") in {"1", "true", "yes"}
        held_pairs = _held_pairs(request) if want_next else None  # bad exclude: 400, no write
        body = JudgmentCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        pair = (body.validated_data["item_a"], body.validated_data["item_b"])
        served = pair_queue.served_items(study=study, user=request.user, pair=pair)
        judgment, created = services.judgment_create(
            study=study,
            annotator=request.user,
            item_a_id=pair[0],
            item_b_id=pair[1],
            label=body.validated_data["label"],
            client_id=body.validated_data["client_id"],
            elapsed_ms=body.validated_data.get("elapsed_ms"),
            served=served,
            reasons=body.validated_data.get("reasons"),
        )
        data = judgment_data(judgment, served if created else None)
        answered = [(judgment.item_a_id, judgment.item_b_id)]
        if want_next:  # after the commit: the stored answer's pair is never offered again
            data["next_pair"] = _next_pair_data(request, study, held_pairs, answered)
        elif created:
            pair_queue.answered(study_id=study.pk, user_id=request.user.pk, pairs=answered)
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class JudgmentBatch(AnnotationAPIView):
    """Many answers in one request (the labelling page sends its outbox this way when it is
    behind); each answer stands on its own."""

    study_cached = True
    max_body_bytes = 256 * 1024

    def get_throttles(self):
        return [JudgmentRateThrottle()]

    def answer_count(self, request) -> int:
        """Tokens this request asks of the limit: one per answer (read by the throttle)."""
        answers = self._answers(request)
        return len(answers)

    def _answers(self, request) -> list:
        if not hasattr(self, "_parsed_answers"):
            self.refuse_oversized(request)  # the throttle reads the body before initial's check
            body = request.data
            if not isinstance(body, dict) or set(body) != {"answers"}:
                raise ValidationError({"answers": 'give {"answers": [ … ]} and nothing else.'})
            answers = body["answers"]
            limit = int(settings.JUDGMENT_BATCH_MAX)
            if not isinstance(answers, list) or not answers:
                raise ValidationError({"answers": "must be a non-empty list of answers."})
            if len(answers) > limit:
                raise ValidationError({"answers": f"at most {limit} answers per request."})
            self._parsed_answers = answers
        return self._parsed_answers

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "next",
                int,
                description="1: also answer the annotator's next pair (`next_pair`), chosen "
                "after the answers are stored; n > 1 (at most JUDGMENT_BATCH_MAX): also the next "
                "n distinct pairs (`next_pairs`, the first of them is `next_pair`), for clients "
                "that answer in batches.",
            ),
            OpenApiParameter(
                "exclude", str, description="With next=1: pairs the client holds unsent."
            ),
        ],
        request=JudgmentBatchSerializer,
        responses=JudgmentBatchResponseSerializer,
        description="Store up to JUDGMENT_BATCH_MAX answers, each with its own client_id, in "
        "one request. Each answer is all-or-nothing on its own and idempotent on its client_id "
        "as with single POSTs; the batch never fails as a whole for one answer. The rate limit "
        "counts answers: answers beyond the tokens left come back 'throttled' (send them "
        "again after retry_after seconds); with no token left the request gets 429. Results "
        "come in the request's order. 200 whatever the answers' outcomes.",
    )
    def post(self, request, study_id: int):
        study = self.study
        raw_next = request.query_params.get("next", "")
        limit = int(settings.JUDGMENT_BATCH_MAX)
        wanted = 1 if raw_next in {"true", "yes"} else int_param(request, "next", 0, lo=0, hi=limit)
        held_pairs = _held_pairs(request) if wanted else None
        answers = self._answers(request)
        granted = getattr(self, "answers_granted", len(answers))
        checked, results = [], [None] * len(answers)
        for n, answer in enumerate(answers[:granted]):
            body = JudgmentCreateSerializer(data=answer) if isinstance(answer, dict) else None
            if body is None or not body.is_valid():
                client_id = answer.get("client_id") if isinstance(answer, dict) else None
                detail = error_text(body.errors) if body is not None else "must be an object."
                results[n] = {
                    "client_id": str(client_id or ""),
                    "status": "error",
                    "judgment": None,
                    "detail": detail,
                }
            else:
                checked.append((n, body.validated_data))
        stored = services.judgments_create_batch(
            study=study,
            annotator=request.user,
            answers=[v for _, v in checked],
        )
        attach_spaces(
            [i for r in stored if r.judgment for i in (r.judgment.item_a, r.judgment.item_b)]
        )
        for (n, _), result in zip(checked, stored, strict=True):
            results[n] = {
                "client_id": result.client_id,
                "status": result.status,
                "judgment": judgment_data(result.judgment) if result.judgment else None,
                "detail": result.detail,
            }
        wait = round(float(getattr(self, "answers_retry_after", 0.0)), 3)
        for n in range(granted, len(answers)):
            client_id = answers[n].get("client_id") if isinstance(answers[n], dict) else None
            results[n] = {
                "client_id": str(client_id or ""),
                "status": "throttled",
                "judgment": None,
                "detail": "Too many answers at once; send this one again later.",
                "retry_after": wait,
            }
        pairs = [(r.judgment.item_a_id, r.judgment.item_b_id) for r in stored if r.judgment]
        data = {"results": results}
        if wanted:
            data["next_pair"] = _next_pair_data(request, study, held_pairs, pairs)
        if wanted > 1:
            more, held = [data["next_pair"]], list(held_pairs)
            while len(more) < wanted and not more[-1]["done"]:
                held.append((more[-1]["left"]["id"], more[-1]["right"]["id"]))
                more.append(_next_pair_data(request, study, held, pairs))
            data["next_pairs"] = [p for p in more if not p["done"]]
        elif not wanted and any(r.status == "created" for r in stored):
            pair_queue.answered(study_id=study.pk, user_id=request.user.pk, pairs=pairs)
        return Response(data)


class JudgmentUndo(AnnotationAPIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "ref",
                OpenApiTypes.STR,
                OpenApiParameter.PATH,
                description="The judgment's id or its client_id.",
            )
        ],
        responses={204: None},
    )
    def delete(self, request, study_id: int, ref: str):
        study = self.study
        if ref.isascii() and ref.isdigit() and len(ref) <= 18:
            services.judgment_undo(user=request.user, study=study, judgment_id=int(ref))
        else:
            try:
                client_id = uuid.UUID(ref)
            except ValueError:
                raise ValidationError({"ref": "must be a judgment id or a client_id."}) from None
            services.judgment_undo(user=request.user, study=study, client_id=client_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PairSkipCreate(AnnotationAPIView):
    @extend_schema(request=PairSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request, study_id: int):
        """Pass on a pair (the labelling page's S key): not an answer, and not offered to this
        annotator again. Idempotent: skipping a pair twice answers 200."""
        body = PairSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        skip, created = skips.pair_skip(
            study=self.study,
            user=request.user,
            item_a_id=body.validated_data["item_a"],
            item_b_id=body.validated_data["item_b"],
        )
        data = {"item_a": skip.item_a_id, "item_b": skip.item_b_id, "skipped": True}
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class PairCommentCreate(AnnotationAPIView):
    @extend_schema(request=CommentCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request, study_id: int):
        """A short note on a pair for the study's reviewers (the labelling page's C key);
        idempotent on ``client_id``."""
        body = CommentCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        comment, created = skips.pair_comment(
            study=self.study,
            user=request.user,
            item_a_id=body.validated_data["item_a"],
            item_b_id=body.validated_data["item_b"],
            text=body.validated_data["text"],
            client_id=body.validated_data["client_id"],
        )
        data = {
            "id": comment.pk,
            "item_a": comment.item_a_id,
            "item_b": comment.item_b_id,
            "text": comment.text,
        }
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
