"""The JSON files of a campaign directory (``result.json``, ``conversion.json``, ``campaign.json``), read
without trusting them: what is in the file, or one line saying why it cannot be used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json(path: Path) -> tuple[Any, str | None]:
    """``(data, None)``, or ``(None, "PATH: why")`` when ``path`` cannot be read or is not JSON.
    A missing file raises ``FileNotFoundError``: each caller says what its absence means."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as err:
        return None, f"{path}: cannot read ({getattr(err, 'strerror', None) or err})"
    except ValueError as err:
        return None, f"{path}: not valid JSON ({err})"
