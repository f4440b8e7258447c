"""One account per e-mail address, enforced by the database: a unique index on
``lower(email)`` of ``auth_user`` (empty addresses excepted). The invitation's read check raced:
30 simultaneous invitations with one address made 4 accounts (issue 26).

Addresses already shared (any case) are resolved before the index is made: the address stays
with one account — active first, then one whose password is set (an invitation that was
accepted), then the latest login, then the oldest — and is removed from the others; each removal
is written to the audit log (action ``account.email_cleared``: the account, the address and the
account that kept it) and printed, so an admin can give the person a new address. Nothing else
changes: the accounts, their memberships and answers stay.
"""

from django.db import migrations
from django.db.models.functions import Lower

INDEX = "accounts_user_email_ci_unique"
CLEARED = "account.email_cleared"


def _keeper_order(user):
    usable = bool(user.password) and not user.password.startswith("!")
    login = user.last_login.timestamp() if user.last_login else float("-inf")
    return (not user.is_active, not usable, -login, user.pk)


def shared_addresses_resolve(apps, schema_editor):
    User = apps.get_model("auth", "User")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    users = User.objects.using(schema_editor.connection.alias).exclude(email="")
    groups: dict[str, list] = {}
    for user in users.annotate(address=Lower("email")).order_by("address", "pk"):
        groups.setdefault(user.address, []).append(user)
    for address, group in groups.items():
        if len(group) < 2:
            continue
        keeper, *others = sorted(group, key=_keeper_order)
        for user in others:
            AuditEvent.objects.create(
                action=CLEARED,
                actor_name="migration accounts.0002",
                target_type="auth.user",
                target_id=str(user.pk),
                detail={
                    "username": user.username,
                    "email": user.email,
                    "kept_by": {"id": keeper.pk, "username": keeper.username},
                },
            )
            print(
                f"\n  accounts.0002: {address} is used by {keeper.username!r} (kept) and "
                f"{user.username!r} (removed from this account; see the audit log)"
            )
            user.email = ""
            user.save(update_fields=["email"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("audit", "0003_setup_actions"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.RunPython(shared_addresses_resolve, migrations.RunPython.noop),
        migrations.RunSQL(
            f"CREATE UNIQUE INDEX {INDEX} ON auth_user (lower(email)) WHERE email <> ''",
            f"DROP INDEX {INDEX}",
        ),
    ]
