"""Group curation: annotators name groups of items they find comparable.

``services`` (create, rename, add and remove members, with history and the study's group
revision), ``suggestions`` (the items nearest a group, and how alike its members are), ``selectors``
(members, history, item search), ``api`` with ``serializers`` (the endpoints behind the groups
page, ``templates/annotation/groups.html``).
"""
