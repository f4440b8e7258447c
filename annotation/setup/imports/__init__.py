"""The import page's feedback imports as jobs: the preview kept, confirmed once (an atomic
claim), stored by the worker with a lease, and swept (``jobs``)."""
