"""The version menus (the version page's "compare with", the audit form's version) list what
matters — the published, the current and the latest version of each method, and the page's
previous one — with every version behind a link: a study that fitted 44 versions in ten minutes
listed all 44."""

from __future__ import annotations

import re

from django.urls import reverse

from learning.models import MetricVersion
from learning.refits import service
from learning.versions.selectors import versions_that_matter

from .helpers import add_simulated, admin_of, versions


def _pile_up(study, n: int) -> list[MetricVersion]:
    """``n`` more ready EXPLORE versions (copies of the fitted one, as a burst leaves them),
    none informative, the newest last."""
    made = []
    model = versions(study, method="explore", status="ready")[-1]
    for i in range(n):
        model.pk = None
        model.fingerprint = f"pile-{i}"
        model.informative = False
        model.is_published = False
        model.save()
        made.append(MetricVersion.objects.get(pk=model.pk))
    return made


def _options(page: str, select_id: str) -> list[str]:
    block = page.split(f'id="{select_id}"', 1)[1].split("</select>", 1)[0]
    return re.findall(r'<option value="(\d+)"', block)


def test_the_menus_list_the_published_current_and_latest_with_the_rest_behind_a_link(world, client):
    _, _, study, _ = world
    add_simulated(world, 300)
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    first = {v.method: v for v in versions(study, status="ready")}
    MetricVersion.objects.filter(pk=first["explore"].pk).update(informative=True)
    MetricVersion.objects.filter(pk=first["face"].pk).update(is_published=True)
    piled = _pile_up(study, 12)
    total = MetricVersion.objects.ready().filter(study=study).count()
    assert total == 14

    menu = {v.pk: v.menu_tags for v in versions_that_matter(study_id=study.pk)}
    assert menu == {
        first["face"].pk: ["published", "current", "latest"]
        if first["face"].informative
        else ["published", "latest"],
        first["explore"].pk: ["current"],
        piled[-1].pk: ["latest"],
    }

    client.force_login(admin_of(study))
    page = client.get(reverse("learning:version-detail", args=[piled[5].pk]))
    assert page.status_code == 200
    shown = _options(page.content.decode(), "compare-b")
    # The other key versions; the page's own is not offered.
    assert set(map(int, shown)) == set(menu)
    assert f"all {total} versions" in page.content.decode()
    every = client.get(reverse("learning:version-detail", args=[piled[5].pk]), {"versions": "all"})
    assert len(_options(every.content.decode(), "compare-b")) == total - 1

    audits = client.get(reverse("learning:audits", args=[study.pk]))
    assert set(map(int, _options(audits.content.decode(), "id_version"))) == set(menu)
    everything = client.get(reverse("learning:audits", args=[study.pk]), {"versions": "all"})
    assert len(_options(everything.content.decode(), "id_version")) == total
