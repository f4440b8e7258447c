"""Issue 35: a verdict on new items (``verdict``), and ``informative`` no longer true by default.

Versions judged before by the pair-level rule were never judged on new items: their verdict is
blank and they are not informative until a refit judges a new version (never by default)."""

from django.db import migrations, models


def never_judged(apps, schema_editor):
    apps.get_model("learning", "MetricVersion").objects.update(informative=False, verdict="")


class Migration(migrations.Migration):
    dependencies = [
        ("learning", "0016_twins_counterfactuals"),
    ]

    operations = [
        migrations.AlterField(
            model_name="metricversion",
            name="informative",
            field=models.BooleanField(
                default=False,
                help_text="verdict == informative: predicts the answers of new people better than the constant rate (learning/evaluation/informative.py); else never the study's current metric.",
            ),
        ),
        migrations.AddField(
            model_name="metricversion",
            name="verdict",
            field=models.CharField(
                blank=True,
                default="",
                help_text='informative, not informative or cannot tell yet, on new items (diagnostics["validity"]); blank: never judged.',
                max_length=20,
            ),
        ),
        migrations.RunPython(never_judged, migrations.RunPython.noop),
    ]
