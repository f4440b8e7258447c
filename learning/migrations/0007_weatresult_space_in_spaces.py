# Written by hand: the embedding-space models moved from annotation to spaces (state only).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0006_explore_auto_bound"),
        ("spaces", "0001_initial"),
    ]

    operations = [
        # The column and its foreign key keep pointing at the same table
        # (annotation_embeddingspace, now spaces.EmbeddingSpace's db_table).
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="weatresult",
                    name="space",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="spaces.embeddingspace",
                    ),
                ),
            ],
        ),
    ]
