"""MkDocs hook: every script and font of the manual is served from the site itself.

The theme's fonts are the system's (``theme.font: false`` in ``mkdocs.yml``: no Google Fonts).
The two libraries that draw are vendored under ``docs/assets/vendor/`` (:data:`VENDORED`: each
folder holds the release's files as npm publishes them, and its licence) and added only to the
pages that need them:

- a page with maths (``pymdownx.arithmatex``'s ``class="arithmatex"``, from the docstrings) gets
  KaTeX's script and style sheet, and a line that draws each formula with it (only KaTeX's
  ``woff2`` fonts are vendored: every browser that runs the theme reads them);
- a page with a diagram (a ``mermaid`` fence: ``class="mermaid"``) gets Mermaid's script before
  the theme's: the theme draws with a ``mermaid`` already loaded and fetches it from unpkg.com
  only when there is none.

Where the files come from (npm's registry, ``npm pack``): ``katex-0.16.47.tgz`` (sha256
``ad2d1ab2f7fcc227019784320e8a2c5218ff6bb333b36df4136d10365ae29375``): ``dist/katex.min.js``,
``dist/katex.min.css``, ``dist/fonts/*.woff2``, ``LICENSE``; ``mermaid-11.17.2.tgz`` (sha256
``6ad2f42c3fc26bbf9e45cbb6d11898972573ea52b33a5f4ff51952899f950ffd``): ``dist/mermaid.min.js``
(the build the theme would fetch: ``mermaid@11``), ``LICENSE``. Both MIT. To update one, pack the
new version, copy the same files into a folder named after it, and change :data:`VENDORED`.
"""
from __future__ import annotations

import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

VENDOR_DIR = "assets/vendor"
#: The vendored libraries: name -> the version whose files ``docs/assets/vendor/<name>-<version>/`` holds.
VENDORED = {"katex": "0.16.47", "mermaid": "11.17.2"}

# KaTeX draws each formula arithmatex left as \( \) or \[ \] text (errors shown in place, in red).
_DRAW_MATHS = (
    "document.querySelectorAll('.arithmatex').forEach(function (el) {"
    " var tex = el.textContent.trim(); var display = tex.startsWith('\\\\[');"
    " katex.render(tex.slice(2, -2), el, {displayMode: display, throwOnError: false}); });"
)
_THEME_SCRIPT = re.compile(r'<script src="[^"]*assets/javascripts/bundle\.[^"]*"')


def asset(name: str, file: str) -> str:
    """A vendored file's path on the site, e.g. ``assets/vendor/katex-0.16.47/katex.min.js``."""
    return f"{VENDOR_DIR}/{name}-{VENDORED[name]}/{file}"


def on_post_page(output: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Add the vendored scripts a page needs, before the theme's own script."""
    def url(path: str) -> str:
        return get_relative_url(path, page.url or ".")

    head: list[str] = []
    scripts: list[str] = []
    if 'class="arithmatex"' in output:
        head.append(f'<link rel="stylesheet" href="{url(asset("katex", "katex.min.css"))}">')
        scripts += [f'<script src="{url(asset("katex", "katex.min.js"))}"></script>', f"<script>{_DRAW_MATHS}</script>"]
    if 'class="mermaid"' in output:
        scripts.append(f'<script src="{url(asset("mermaid", "mermaid.min.js"))}"></script>')
    if not scripts:
        return output
    theme = _THEME_SCRIPT.search(output)
    if theme is None:
        raise ValueError(f"{page.file.src_uri}: the theme's script (assets/javascripts/bundle.*.js) was not found; "
                         "docs/offline.py puts the vendored scripts before it")
    output = output[:theme.start()] + "".join(scripts) + output[theme.start():]
    return output.replace("</head>", "".join(head) + "</head>", 1)
