"""The catalogue: what the engine offers, as data for the CLI, the API and the page.

Stages (name, label, title, language, whether an FX graph, where a result holds them), the
options a user may choose (with their choices and defaults), the error kinds, the server's limits
on untrusted bytes (`limits.py`) and the gallery.
The page reads its labels and controls from here (through the API) instead of keeping copies.
"""

from __future__ import annotations

from .errors import ErrorKind
from .gallery import list_examples
from .limits import catalogue as limit_catalogue
from .options import option_catalogue
from .features import STAGES


def catalogue() -> dict:
    return {
        "stages": [stage.to_json() for stage in STAGES],
        "options": option_catalogue(),
        "error_kinds": ErrorKind.catalogue(),
        "limits": limit_catalogue(),
        "gallery": [{"slug": e.slug, "title": e.title, "teaches": e.teaches}
                    for e in list_examples()],
    }
