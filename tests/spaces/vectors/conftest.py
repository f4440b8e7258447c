from pathlib import Path

import pytest


@pytest.fixture
def media(media_root) -> Path:
    return media_root
