"""Load and fault runs against a real stack (gunicorn, PostgreSQL, Redis, a Celery worker).

    .venv/bin/python -m loadtest.load   [--quick] [--annotators 50] [--seconds 60]
    .venv/bin/python -m loadtest.faults [--quick]

Everything runs on 127.0.0.1 and is thrown away afterwards: a scratch PostgreSQL database on
the local server (created, migrated, seeded, dropped), a private ``redis-server`` on a free port,
gunicorn and a Celery worker (which sweeps; no beat). See docs/reliability.md.
"""
