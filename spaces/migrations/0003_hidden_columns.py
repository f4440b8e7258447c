"""Records: the columns annotators do not see. Existing record spaces hide their label column,
the default for new ones (``spaces.records.record_space_create``)."""

from django.db import migrations, models


def hide_labels(apps, schema_editor):
    EmbeddingSpace = apps.get_model("spaces", "EmbeddingSpace")
    for space in EmbeddingSpace.objects.filter(kind="records").exclude(label_column=""):
        space.hidden_columns = [space.label_column]
        space.save(update_fields=["hidden_columns"])


class Migration(migrations.Migration):
    dependencies = [
        ("spaces", "0002_records_and_texts"),
    ]

    operations = [
        migrations.AddField(
            model_name="embeddingspace",
            name="hidden_columns",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="Records: the fields annotators never see nor search (by default the "
                "label column); see shown_payload.",
            ),
        ),
        migrations.RunPython(hide_labels, migrations.RunPython.noop),
    ]
