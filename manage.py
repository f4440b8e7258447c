#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A bad environment value: one readable line, non-zero exit, no traceback.
        sys.stderr.write(f"ImproperlyConfigured: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
