"""``drift_alarm_rate`` is now a study's false-alarm budget over all its checks (issue 35), no
longer a rate per comparison: the default becomes 0.05, and studies left at the old default
(0.001 per comparison) move to it."""

import django.core.validators
from django.db import migrations, models

OLD_DEFAULT, NEW_DEFAULT = 0.001, 0.05


def _to_study_rate(apps, schema_editor):
    settings = apps.get_model("learning", "StudyLearningSettings")
    settings.objects.filter(drift_alarm_rate=OLD_DEFAULT).update(drift_alarm_rate=NEW_DEFAULT)


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0016_publish_version_override"),
    ]

    operations = [
        migrations.AlterField(
            model_name="studylearningsettings",
            name="drift_alarm_rate",
            field=models.FloatField(
                default=NEW_DEFAULT,
                help_text="Drift sensitivity: the chance that a study whose annotators never "
                "change their rule gets a drift flag at all, over its whole life (all its "
                "versions' checks together: learning/versions/drift.py). Larger: more "
                "sensitive, more false alarms.",
                validators=[
                    django.core.validators.MinValueValidator(1e-06),
                    django.core.validators.MaxValueValidator(0.2),
                ],
            ),
        ),
        migrations.RunPython(_to_study_rate, migrations.RunPython.noop),
    ]
