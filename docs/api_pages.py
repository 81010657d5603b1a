"""MkDocs hook: the API reference, one generated page per module, grouped by package in the nav.

Every module of the project's packages (:func:`docstrings.load_project`) gets a page at its path:
``api/ssot/config.md`` for ``ssot.config``, ``api/ssot/results/index.md`` for the package
``ssot.results`` (the theme's section index: the package's section opens on it). A page holds the
module's name, a summary table of what the page documents (name, one-line summary, kind; a
package's table lists its modules too), then the module rendered by mkdocstrings (``::: module``).
The nav entry ``API: api/index.md`` of ``mkdocs.yml`` becomes a section: that overview, then one
sub-section per package, its modules in it. The marker ``<!-- api-modules -->`` on a page becomes
the table of every module with its summary.

A module's table lists what mkdocstrings renders of it (:func:`docstrings.documented`): the public
names with a docstring (a ``#:`` comment counts), and the names it imports only when it exports them
(``__all__``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import griffe
from docstrings import Index, Renderer, citation_anchors, documented, load_project, project_index, project_packages, scopes_of, table_cell
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

API_DIR = "api"
INDEX_PAGE = f"{API_DIR}/index.md"
MODULES_MARKER = "<!-- api-modules -->"


def modules() -> Iterator[griffe.Module]:
    """Every module of the project, each package before its modules, its sub-packages after them."""
    def visit(module: griffe.Module) -> Iterator[griffe.Module]:
        yield module
        for child in _children(module):
            yield from visit(child)
    collection = load_project()
    for name in project_packages():
        yield from visit(collection[name])


def is_package(module: griffe.Module) -> bool:
    """A package or a sub-package (a folder with ``__init__.py``)."""
    return bool(module.is_package or module.is_subpackage)


def _children(package: griffe.Module) -> list[griffe.Module]:
    """A package's modules, sorted, its sub-packages after them."""
    return sorted((m for m in package.modules.values() if not m.is_alias), key=lambda m: (is_package(m), m.name))


def page_of(module: griffe.Module) -> str:
    """The page of a module, relative to the docs folder (a package's is its folder's ``index.md``)."""
    path = module.path.replace(".", "/")
    return f"{API_DIR}/{path}/index.md" if is_package(module) else f"{API_DIR}/{path}.md"


def kind_of(obj: griffe.Object | griffe.Alias) -> str:
    try:
        return (obj.final_target if isinstance(obj, griffe.Alias) else obj).kind.value
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return "name"


_MASK = re.compile(r":(?:py:)?[a-z]+:`[^`]+`|``.+?``|`[^`]+`", flags=re.S)


def first_sentence(docstring: str) -> str:
    """A docstring's summary: its first paragraph up to the first full stop that ends a sentence
    (not one inside code or a role)."""
    paragraph = " ".join(docstring.strip().split("\n\n", 1)[0].split())
    masked = _MASK.sub(lambda m: "x" * len(m[0]), paragraph)
    end = re.search(r"[.!?](?=\s+[A-Z(`*\"])", masked)
    return paragraph[:end.end()] if end else paragraph


def summary(obj: griffe.Object | griffe.Alias, index: Index) -> str:
    """The one-line summary of an object, as Markdown fit for a table cell."""
    target = obj.final_target if isinstance(obj, griffe.Alias) else obj
    if target.docstring is None:
        return ""
    renderer = Renderer(index, scopes_of(target), citation_anchors(target))
    return table_cell(renderer.inline(first_sentence(target.docstring.value)))


def summary_table(module: griffe.Module, index: Index) -> str:
    rows: list[tuple[griffe.Object | griffe.Alias, str]] = [(m, "module") for m in sorted(module.modules.values(), key=lambda m: m.name) if not m.is_alias]
    rows += [(obj, kind_of(obj)) for obj in module.members.values() if documented(obj)]
    if not rows:
        return ""
    lines = ['<div class="api-summary" markdown>', "", "| name | summary | kind |", "| --- | --- | --- |"]
    lines += [f"| [`{obj.name}`][{obj.path}] | {summary(obj, index)} | {kind} |" for obj, kind in rows]
    return "\n".join(lines + ["", "</div>"])


def page(module: griffe.Module, index: Index) -> str:
    """The Markdown of a module's page."""
    parts = [f"# `{module.path}`", "", summary_table(module, index), "", f"::: {module.path}",
             "    options:", "      show_root_heading: false", "      heading_level: 2", ""]
    return "\n".join(parts)


def nav() -> list[Any]:
    """The API section of the nav: the overview, then each package's modules (sub-packages nested)."""
    def section(package: griffe.Module) -> dict[str, list[Any]]:
        entries: list[Any] = [page_of(package)]  # the section's index page
        for child in _children(package):
            entries.append(section(child) if is_package(child) else {child.path: page_of(child)})
        return {package.path: entries}
    collection = load_project()
    return [INDEX_PAGE, *(section(collection[name]) for name in project_packages())]


def modules_table() -> str:
    """Every module with its summary, one table per package of the project."""
    index = project_index()
    parts = []
    for name in project_packages():
        parts += [f"### `{name}`", "", '<div class="api-summary" markdown>', "", "| module | summary |", "| --- | --- |"]
        parts += [f"| [`{m.path}`]({page_of(m).removeprefix(API_DIR + '/')}) | {summary(m, index)} |"
                  for m in modules() if m.path.split(".")[0] == name]
        parts += ["", "</div>", ""]
    return "\n".join(parts)


def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    """Replace the nav entry that points at the API overview by the generated API section."""
    entries = config.nav or []
    for n, entry in enumerate(entries):
        if isinstance(entry, dict) and list(entry.values()) == [INDEX_PAGE]:
            entries[n] = {next(iter(entry)): nav()}
            break
    else:
        raise ValueError(f"mkdocs.yml's nav has no entry for {INDEX_PAGE} (the generated API pages hang there)")
    return config


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    """Add the page of every module (generated: nothing is written into docs/)."""
    index = project_index()
    for module in modules():
        files.append(File.generated(config, page_of(module), content=page(module, index)))
    return files


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return markdown.replace(MODULES_MARKER, modules_table()) if MODULES_MARKER in markdown else markdown
