from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0015_version_informative"),
    ]

    operations = [
        migrations.AddField(
            model_name="metricversion",
            name="publish_override",
            field=models.JSONField(
                blank=True,
                help_text="Published although its verdict was not informative: {reason, by, at} (learning/versions/validity.py); null otherwise.",
                null=True,
            ),
        ),
    ]
