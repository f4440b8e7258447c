"""Spaces get an owner and a sharing rule (spaces/sharing.py). An existing space's owner is the
user whose upload created it, where an import row says so; any other space stays staff only
(no owner, shared with nobody)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def owners_from_uploads(apps, schema_editor):
    EmbeddingSpace = apps.get_model("spaces", "EmbeddingSpace")
    EmbeddingImport = apps.get_model("spaces", "EmbeddingImport")
    creators = (
        EmbeddingImport.objects.filter(space__isnull=False, created_by__isnull=False)
        .order_by("id")
        .values_list("space_id", "created_by_id")
    )
    for space_id, user_id in dict(creators).items():
        EmbeddingSpace.objects.filter(pk=space_id, owner__isnull=True).update(owner_id=user_id)


class Migration(migrations.Migration):
    dependencies = [
        ("spaces", "0003_hidden_columns"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="embeddingspace",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                help_text="Who uploaded it, or who it was given to; none: staff only.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="embeddingspace",
            name="shared_with",
            field=models.ManyToManyField(
                blank=True,
                help_text="People who may attach it to the studies they administer.",
                related_name="shared_spaces",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="embeddingspace",
            name="shared_with_study_admins",
            field=models.BooleanField(
                default=False,
                help_text="Every admin of a study may attach it to the studies they administer.",
            ),
        ),
        migrations.RunPython(owners_from_uploads, migrations.RunPython.noop),
    ]
