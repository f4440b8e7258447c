# Written by hand: the API-token model moved from learning to accounts.
"""The old state of ``learning.ApiToken`` goes (state only): ``accounts.0001`` holds the model now,
on the same table."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0010_learning_weight_by_reliability"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[migrations.DeleteModel(name="ApiToken")],
        ),
    ]
