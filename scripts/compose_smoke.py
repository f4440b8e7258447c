"""``make compose-smoke``: the container image and compose.yaml, end to end, timed.

Builds the images (the base first when it is the local stand-in, scripts/docker_base.sh), starts
the stack with the host's network on free ports under its own compose project (``fmsmoke``: its
own volumes), loads the demo, makes an admin and an annotator with API tokens, posts answers over
the API, waits for the refit that learned them, publishes that version, downloads its Sigma,
stops and starts the stack again (the upgrade steps of docs/deploy.md: migrate, then up), finds
everything still there, backs it up (pg_dump + the media volume), restores the backup into new
volumes and finds it there too, and removes the stack. Prints each step's time and the total.

    .venv/bin/python scripts/compose_smoke.py [--keep] [--answers N] [--no-backup] [--s3]

Needs a Docker engine (``docker info``) and Docker Compose (``docker-compose`` or ``docker
compose``); exit 2 when there is none."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from smoke import api, stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the stack running at the end")
    parser.add_argument("--answers", type=int, default=30, help="answers posted over the API")
    parser.add_argument("--no-backup", action="store_true", help="skip backup and restore")
    parser.add_argument(
        "--s3",
        action="store_true",
        help="media on the s3 profile's store (FAIRMETRIC_STORAGE=s3): checks every file is in "
        "the bucket and none under MEDIA_ROOT; no backup step (the bucket is backed up by the "
        "store's own tools)",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds for each wait")
    args = parser.parse_args(argv)
    if not stack.engine_ready():
        print("compose-smoke: no Docker engine answers (`docker info` failed)", file=sys.stderr)
        return 2
    started = time.monotonic()
    smoke = stack.Stack(timeout=args.timeout, s3=args.s3)
    ok = False
    try:
        with smoke.step("build the images (base if missing, app, postgres, redis)"):
            smoke.build()
        with smoke.step("start the stack (migrate, web, 3 workers, postgres, redis)"):
            smoke.fresh_start()
        with smoke.step("load the demo (load-demo role)"):
            smoke.compose("run", "--rm", "--no-deps", "migrate", "load-demo")
        with smoke.step("an admin and an annotator with API tokens"):
            people = smoke.manage_json(api.PEOPLE_CODE)
        client = api.Client(smoke.base_url)
        with smoke.step(f"post {args.answers} answers over the API"):
            answers = api.post_answers(client, people, args.answers)
        with smoke.step("wait for the version that learned them"):
            version = api.wait_version(smoke, client, people, max(answers.values()))
        with smoke.step("publish it (POST /api/versions/{id}/publish/)"):
            published = api.publish(client, people, version)
        with smoke.step("download the published Sigma"):
            before = api.snapshot(client, people, answers)
        print(
            f"  version {published['id']} ({published['validity'].get('verdict')}), Sigma "
            f"{before['shape']} sha256 {before['sigma_sha256'][:12]}, {before['judgments']:,} "
            "judgments exported"
        )
        if args.s3:
            with smoke.step("every file in the bucket, none under MEDIA_ROOT"):
                smoke.check_s3()
        with smoke.step("restart: down, migrate (upgrade step), up"):
            smoke.restart()
        with smoke.step("everything still there after the restart"):
            api.same(before, api.snapshot(client, people, answers))
            api.post_answers(client, people, 1)  # and the stack still takes answers
        if not (args.no_backup or args.s3):
            with smoke.step("back up: pg_dump + the media volume"):
                backup = smoke.backup()
            with smoke.step("restore the backup into new volumes, start"):
                smoke.restore(backup)
            with smoke.step("everything there after the restore"):
                api.same(before, api.snapshot(client, people, answers), after_restore=True)
        ok = True
    finally:
        if not ok:
            smoke.show_logs()
        if args.keep and ok:
            print(f"compose-smoke: the stack runs at {smoke.base_url} (project {stack.PROJECT})")
        else:
            with smoke.step("stop and remove the stack and its volumes"):
                smoke.remove()
    smoke.report(time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
