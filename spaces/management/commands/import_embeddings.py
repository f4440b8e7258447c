"""python manage.py import_embeddings PATH --name NAME [--format ...] [--limit N] ..."""

from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from spaces.exceptions import InputFileError
from spaces.models import Item
from spaces.vectors.formats import FORMATS
from spaces.vectors.importing import space_import


class ProgressBars:
    """One tqdm bar per stage (reading, storing) on stderr."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar: tqdm | None = None
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        if stage != self.stage:
            self.close()
            self.stage = stage
            unit = "vectors" if stage == "reading" else "items"
            self.bar = tqdm(
                total=total,
                desc=stage,
                unit=f" {unit}",
                file=sys.stderr,
                unit_scale=True,
                leave=True,
            )
        if total is not None and self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class Command(BaseCommand):
    help = (
        "Import an embedding file as a new embedding space with one item per vector. Formats: "
        "word2vec (text with a '<count> <dimension>' header), glove (text without header), "
        "word2vec-bin, npy (+ --vocab, one key per line), csv (a key column plus numeric "
        "columns; --fields keeps named columns as record fields; or --vectors FILE.npy holds "
        "the vectors and the other columns are record fields). Text files may be gzipped. "
        "Duplicate keys, NaN/inf, mixed dimensions, undecodable bytes and empty files are "
        "rejected with the line number; on any error nothing is stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the embedding file")
        parser.add_argument("--name", required=True, help="name of the new space (unique)")
        parser.add_argument(
            "--format",
            dest="fmt",
            default="auto",
            help=f"one of {', '.join(FORMATS)}, or auto (default: guess)",
        )
        parser.add_argument("--limit", type=int, help="import only the first N vectors")
        parser.add_argument(
            "--kind",
            choices=Item.Kind.values,
            help="kind of every item (default: record with fields, else word)",
        )
        parser.add_argument(
            "--tag", action="append", default=[], dest="tags", help="tag every item (repeatable)"
        )
        parser.add_argument("--source", default="", help="where the vectors come from")
        parser.add_argument("--vocab", help="npy: the vocabulary file (one key per line)")
        parser.add_argument("--vectors", help="csv: a .npy with one vector per data row")
        parser.add_argument("--key-column", help="csv: the key column (default key, or first)")
        parser.add_argument(
            "--fields", default="", help="csv: comma-separated columns kept as record fields"
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, **options):
        bars = ProgressBars(enabled=not options["no_progress"])
        started = time.monotonic()
        fields = [f.strip() for f in options["fields"].split(",") if f.strip()]
        try:
            space = space_import(
                path=options["path"],
                name=options["name"],
                fmt=options["fmt"],
                limit=options["limit"],
                source=options["source"],
                kind=options["kind"],
                tags=options["tags"],
                progress=bars,
                vocab=options["vocab"],
                vectors=options["vectors"],
                key_column=options["key_column"],
                fields=fields,
            )
        except InputFileError as exc:
            raise CommandError(f"{options['path']}: {exc} (nothing was stored)") from None
        finally:
            bars.close()
        seconds = time.monotonic() - started
        tags = f", tagged {', '.join(options['tags'])}" if options["tags"] else ""
        self.stdout.write(
            f"Imported space {space.name!r} (id {space.pk}): {space.item_count} items x "
            f"{space.dimension} dimensions{tags} in {seconds:.1f}s\n"
            f"  matrix {space.matrix.name}  sha256 {space.sha256}"
        )
