"""MkDocs hook: the gallery of the examples, generated from ``examples/`` and the manual's pages.

The marker ``<!-- examples-gallery -->`` on a page becomes a grid of cards, one per example (its
first figure, its purpose), then a section per example with what it does and the commands (its
docstring), the figures it produces and the pages of the manual that report its results:

- an example is a file of ``examples/`` that runs as a script (``if __name__ == "__main__":``);
- its **results** are the sections of the manual's pages that name it (``examples/<name>.py``),
  this page aside;
- its **figures** are the images of ``docs/figures/`` that it writes (a ``.png`` name in its code,
  an f-string's fields as wildcards: ``f"solvers_{task}.png"`` is ``solvers_*.png``) or that those
  sections show.
"""
from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docstrings import Renderer, project_index
from markdown.extensions.toc import slugify
from mkdocs.config.defaults import MkDocsConfig

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES_DIR = ROOT / "examples"
FIGURES_DIR = DOCS / "figures"
MARKER = "<!-- examples-gallery -->"
GALLERY_PAGE = "examples.md"  # where the marker is (the results sections exclude it)


@dataclass
class Example:
    """One example script, as the gallery shows it."""

    name: str  # file name, e.g. "solvers.py"
    title: str  # the docstring's first paragraph: what it is for
    commands: list[str]  # the command lines of the docstring's first indented block
    details: str  # the rest of the docstring (reST, rendered by docs/docstrings.py)
    figures: list[str] = field(default_factory=list)  # under docs/, e.g. "figures/solvers_p2h.png"
    results: list[tuple[str, str]] = field(default_factory=list)  # (link text, link relative to docs/)

    @property
    def anchor(self) -> str:
        return "example-" + self.name.removesuffix(".py").replace("_", "-")


def is_example(path: Path) -> bool:
    """A file of ``examples/`` that runs as a script (``examples/common.py`` is what they share)."""
    tree = ast.parse(path.read_text())
    return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body)


def example_files() -> list[Path]:
    return sorted(p for p in EXAMPLES_DIR.glob("*.py") if is_example(p))


def written_figures(tree: ast.AST) -> list[str]:
    """Patterns of the ``.png`` files a script names (an f-string's fields become ``*``)."""
    patterns = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".png"):
            patterns.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            text = "".join(str(v.value) if isinstance(v, ast.Constant) else "*" for v in node.values)
            if text.endswith(".png"):
                patterns.append(text)
    return [Path(p).name for p in patterns]


def parse_docstring(doc: str) -> tuple[str, list[str], str]:
    """(first paragraph, the command lines of the first indented block, the rest)."""
    paragraphs = doc.strip().split("\n\n")
    title = " ".join(paragraphs[0].split())
    commands: list[str] = []
    rest = paragraphs[1:]
    if rest and all(line.startswith("    ") for line in rest[0].splitlines()):
        commands = [line.strip() for line in rest[0].splitlines()]
        rest = rest[1:]
    return title, commands, "\n\n".join(rest)


@dataclass
class Section:
    """A section of a page of the manual: the page, its heading, its Markdown."""

    page: str  # relative to docs/
    page_title: str
    heading: str | None  # None: the page's text before its first section
    text: str

    @property
    def link(self) -> str:
        return self.page + (f"#{slugify(self.heading.replace('`', ''), '-')}" if self.heading else "")

    @property
    def label(self) -> str:
        return f"{self.page_title}: {self.heading}" if self.heading else self.page_title


def nav_titles(nav: Any) -> dict[str, str]:
    """Page -> its title in ``mkdocs.yml``'s nav (pages listed without a title are left out)."""
    titles: dict[str, str] = {}
    for entry in nav if isinstance(nav, list) else []:
        if isinstance(entry, dict):
            for title, value in entry.items():
                if isinstance(value, str):
                    titles[value] = title
                else:
                    titles.update(nav_titles(value))
    return titles


def sections(titles: dict[str, str] | None = None) -> list[Section]:
    """Every ``##``-level section of the manual's pages (the gallery's page aside), each page named by
    its nav title where ``titles`` has one, else by its ``#`` heading."""
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        page = path.relative_to(DOCS).as_posix()
        if page == GALLERY_PAGE:
            continue
        text = path.read_text()
        title_match = re.search(r"^# (.+)$", text, flags=re.M)
        title = (titles or {}).get(page) or (title_match[1].replace("`", "") if title_match else page)
        parts = re.split(r"^## (.+)$", text, flags=re.M)
        found.append(Section(page, title, None, parts[0]))
        found += [Section(page, title, heading.strip().replace("`", ""), body) for heading, body in zip(parts[1::2], parts[2::2])]
    return found


def examples(titles: dict[str, str] | None = None) -> list[Example]:
    """Every example with its purpose, commands, figures and results sections (pages named by ``titles``)."""
    all_sections = sections(titles)
    figures = sorted(p.relative_to(DOCS).as_posix() for p in FIGURES_DIR.glob("*.png"))
    found = []
    for path in example_files():
        tree = ast.parse(path.read_text())
        title, commands, details = parse_docstring(ast.get_docstring(tree) or path.stem)
        example = Example(path.name, title, commands, details)
        mentions = [s for s in all_sections if f"examples/{path.name}" in s.text]
        example.results = [(s.label, s.link) for s in mentions]
        shown = {m for s in mentions for m in re.findall(r"!\[[^\]]*\]\((?:\.\./)*(figures/[^)\s]+\.png)\)", s.text)}
        patterns = written_figures(tree)
        example.figures = [f for f in figures if f in shown or any(fnmatch.fnmatch(Path(f).name, p) for p in patterns)]
        found.append(example)
    return found


def _card(example: Example) -> str:
    lines = [f"-   **[`{example.name}`](#{example.anchor})**", ""]
    if example.figures:
        lines += [f"    ![{example.name}]({example.figures[0]}){{ loading=lazy }}", ""]
    lines += [f"    {example.title}", ""]
    return "\n".join(lines)


def _section(example: Example) -> str:
    renderer = Renderer(project_index(), [], {})
    parts = [f"### `{example.name}` {{ #{example.anchor} }}", "", renderer.render(example.title), ""]
    if example.commands:
        parts += ["```bash", *example.commands, "```", ""]
    if example.details:
        parts += [renderer.render(example.details), ""]
    if example.figures:
        parts += ["**Figures**", ""] + [f"![{Path(f).stem}]({f}){{ loading=lazy }}" for f in example.figures] + [""]
    if example.results:
        parts += ["**Results in the manual**: " + ", ".join(f"[{label}]({link})" for label, link in example.results), ""]
    return "\n".join(parts)


def gallery(titles: dict[str, str] | None = None) -> str:
    """The Markdown the marker becomes."""
    found = examples(titles)
    cards = ['<div class="grid cards" markdown>', "", *(_card(e) for e in found), "</div>", ""]
    return "\n".join(cards + [_section(e) for e in found])


def on_page_markdown(markdown: str, config: MkDocsConfig, **kwargs: Any) -> str:
    return markdown.replace(MARKER, gallery(nav_titles(config.nav))) if MARKER in markdown else markdown
