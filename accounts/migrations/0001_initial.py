# Written by hand: the API-token model moved from learning to accounts.
"""``ApiToken`` moves here from ``learning``: state only, no change to the table.

The table keeps its name (``learning_apitoken``, the model's ``db_table``), its rows and its
foreign key; ``learning.0011`` drops the old state. In the database only the content type
changes: ``learning.apitoken`` becomes ``accounts.apitoken``, keeping its id, so permissions and
admin log entries stay attached.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def _move_content_type(apps, schema_editor, old: str, new: str) -> None:
    """Rename the model's content type from app ``old`` to app ``new`` (id kept); a row already
    under ``new`` (made by a ``post_migrate`` in between, with nothing attached) is dropped."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    old_row = ContentType.objects.using(db).filter(app_label=old, model="apitoken").first()
    if old_row is not None:
        ContentType.objects.using(db).filter(app_label=new, model="apitoken").delete()
        old_row.app_label = new
        old_row.save(using=db, update_fields=["app_label"])
    from django.contrib.contenttypes.models import ContentType as CurrentContentType

    CurrentContentType.objects.clear_cache()


def content_type_forwards(apps, schema_editor):
    _move_content_type(apps, schema_editor, "learning", "accounts")


def content_type_backwards(apps, schema_editor):
    _move_content_type(apps, schema_editor, "accounts", "learning")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("learning", "0010_learning_weight_by_reliability"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("name", models.CharField(max_length=100)),
                        (
                            "prefix",
                            models.CharField(
                                help_text="First characters, to recognise it.", max_length=12
                            ),
                        ),
                        ("key_hash", models.CharField(max_length=64, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="api_tokens",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={"db_table": "learning_apitoken", "ordering": ["-id"]},
                ),
            ],
        ),
        migrations.RunPython(content_type_forwards, content_type_backwards, elidable=False),
    ]
