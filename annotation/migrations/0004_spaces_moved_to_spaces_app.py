# Written by hand: the embedding-space models moved from annotation to spaces.
"""Annotation's relations point at ``spaces`` models; the old model states go (state only).

The tables, their rows and their foreign keys stay as they are: ``spaces.0001`` created the
same models, on the same tables, in the ``spaces`` app. In the database only the content types
change: ``annotation.embeddingspace`` (and item, tag, embeddingimport) become ``spaces.*``,
keeping their ids, so permissions and admin log entries stay attached.

Depends on ``learning.0007``: ``WeatResult.space`` must point at ``spaces.EmbeddingSpace``
before the old state of ``annotation.EmbeddingSpace`` is deleted.
"""

import django.db.models.deletion
from django.db import migrations, models

MOVED_MODELS = ["embeddingspace", "tag", "item", "embeddingimport"]


def _move_content_types(apps, schema_editor, old: str, new: str) -> None:
    """Rename the moved models' content types from app ``old`` to app ``new`` (ids kept).

    A row already under ``new`` can only have been made by a ``post_migrate`` that ran between
    ``spaces.0001`` and this migration (with no permission granted yet): it is dropped, so the
    old row, the one permissions and log entries point at, can take its name.
    """
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MOVED_MODELS:
        old_row = ContentType.objects.using(db).filter(app_label=old, model=model).first()
        if old_row is None:
            continue
        ContentType.objects.using(db).filter(app_label=new, model=model).delete()
        old_row.app_label = new
        old_row.save(using=db, update_fields=["app_label"])
    from django.contrib.contenttypes.models import ContentType as CurrentContentType

    CurrentContentType.objects.clear_cache()


def content_types_forwards(apps, schema_editor):
    _move_content_types(apps, schema_editor, "annotation", "spaces")


def content_types_backwards(apps, schema_editor):
    _move_content_types(apps, schema_editor, "spaces", "annotation")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0003_embedding_import"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("learning", "0007_weatresult_space_in_spaces"),
        ("spaces", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="study",
                    name="space",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="studies",
                        to="spaces.embeddingspace",
                    ),
                ),
                migrations.AlterField(
                    model_name="study",
                    name="pool_tags",
                    field=models.ManyToManyField(
                        blank=True,
                        help_text="Item pool; empty means all items.",
                        related_name="studies",
                        to="spaces.tag",
                    ),
                ),
                migrations.AlterField(
                    model_name="pairjudgment",
                    name="item_a",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="spaces.item",
                    ),
                ),
                migrations.AlterField(
                    model_name="pairjudgment",
                    name="item_b",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="spaces.item",
                    ),
                ),
                migrations.AlterField(
                    model_name="goldpair",
                    name="item_a",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="spaces.item",
                    ),
                ),
                migrations.AlterField(
                    model_name="goldpair",
                    name="item_b",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="spaces.item",
                    ),
                ),
                migrations.AlterField(
                    model_name="comparablegroup",
                    name="members",
                    field=models.ManyToManyField(
                        blank=True, related_name="comparable_groups", to="spaces.item"
                    ),
                ),
                migrations.AlterField(
                    model_name="groupedit",
                    name="item",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="spaces.item",
                    ),
                ),
                # Item before the models it points at, so no state refers to a deleted model.
                migrations.DeleteModel(name="EmbeddingImport"),
                migrations.DeleteModel(name="Item"),
                migrations.DeleteModel(name="Tag"),
                migrations.DeleteModel(name="EmbeddingSpace"),
            ],
        ),
        migrations.RunPython(content_types_forwards, content_types_backwards, elidable=False),
    ]
