r"""How the code's docstrings become the manual's Markdown: a Griffe extension of mkdocstrings.

The docstrings are NumPy style (numpydoc) with reStructuredText inside, written for Sphinx; the
manual is Markdown. Nothing in the source changes: while the manual builds, this module rewrites
each docstring's reST into Markdown before mkdocstrings parses its NumPy sections.

- **Roles** (``:func:``, ``:class:``, ``:meth:``, ``:mod:``, ``:data:``, ``:attr:``, ``:obj:``,
  ``:exc:``, ``:const:``) become cross-references to the object's entry in the API pages, resolved
  as Sphinx's Python domain does (the enclosing classes, the module, then the full name; ``~`` and a
  leading ``.`` as in Sphinx), with a name imported into a module followed to its definition. A
  name with no entry on the site (a private or external object) becomes code, never a raw role.
  Any other role becomes code as well.
- **Maths**: ``:math:`x``` becomes ``\(x\)`` and a ``.. math::`` block ``\[ ... \]``, which
  ``pymdownx.arithmatex`` keeps for KaTeX (served from the site) to draw.
- **References**: ``.. [1] ...`` becomes an anchored entry and a citation ``[1]_`` a link to it,
  found in the docstring itself or in an enclosing one (the module's).
- **Literal blocks** (a paragraph ending in ``::`` and an indented block) become fenced code.
- **Simple tables** (``=====  =====`` borders) become Markdown tables, **definition lists** (a
  term, its definition indented below) ``def_list``'s.
- **NumPy items** written ``name : what it is`` (prose where NumPy puts a type, as this project
  often does) become the name with that prose as its description; types lose their markup
  (mkdocstrings shows them as code).
The ``#:`` comments that document attributes (above an assignment, or after it on its line, as
Sphinx's autodoc reads them) become the attributes' docstrings through the ``griffe-sphinx``
extension, which ``mkdocs.yml`` lists before this one. What mkdocstrings-python cannot do itself,
and so this module does, is in ``docs/architecture.md`` ("The manual's docstrings").

:func:`load_project` loads the project's packages once with the ``#:`` comments (what the API
pages list, :mod:`api_pages`); :class:`Index` resolves names against it.
"""
from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import griffe
import tomllib

ROOT = Path(__file__).resolve().parents[1]

#: Roles whose display Sphinx ends with ``()`` (``add_function_parentheses``).
CALLABLE_ROLES = ("func", "meth")

_BORDER = re.compile(r"^(\s*)(=+)((?: +=+)+)\s*$")
_MATH_DIRECTIVE = re.compile(r"^(\s*)\.\. math::(.*)$")
_REFERENCE = re.compile(r"^(\s*)\.\. \[(\w+)\]\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_DASHES = re.compile(r"^\s*-{3,}\s*$")
_NAMED_ITEM = re.compile(r"^(\*{0,2}\w+(?:, \*{0,2}\w+)*) : (.+)$")
#: NumPy sections whose items are ``name : type`` lines, each with its description indented below.
NAMED_SECTIONS = ("parameters", "other parameters", "attributes", "raises", "warns", "receives")
#: NumPy sections whose items start with a type (``type`` or ``name : type``).
TYPED_SECTIONS = ("returns", "yields")
# One scan of running text: a role, a code span (kept as it is), a citation.
_INLINE = re.compile(
    r"(?P<role>:(?:py:)?(?P<name>[a-z]+):`(?P<text>[^`]+)`)"
    r"|(?P<code>``.+?``|`[^`]+`)"
    r"|(?P<cite>\[(?P<label>\w+)\]_)",
    flags=re.S,
)


def project_packages() -> tuple[str, ...]:
    """The project's top-level packages, from ``pyproject.toml``'s ``[tool.setuptools.packages.find]``."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    return tuple(p.rstrip("*").rstrip(".") for p in patterns if "." not in p.rstrip("*").rstrip("."))


# --- the project's names -------------------------------------------------------------------------


def walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    """``obj`` and every object defined inside it (aliases, i.e. imported names, are not followed)."""
    yield obj
    for member in obj.members.values():
        if not isinstance(member, griffe.Alias):
            yield from walk(member)


@functools.cache
def load_project() -> griffe.ModulesCollection:
    """The project's packages as Griffe reads them (statically: nothing is imported), with the
    ``#:`` comments as docstrings and the imported names resolved."""
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)], docstring_parser="numpy",
                                 extensions=griffe.load_extensions("griffe_sphinx"))
    for package in project_packages():
        loader.load(package)
    loader.resolve_aliases(implicit=False, external=False)
    return loader.modules_collection


@functools.cache
def project_index() -> Index:
    """The :class:`Index` of :func:`load_project`'s packages."""
    return Index(load_project())


class Index:
    """Every name of the project's packages, and what each one is finally (an imported name: the
    object it imports)."""

    def __init__(self, collection: griffe.ModulesCollection) -> None:
        self.paths: dict[str, griffe.Object | griffe.Alias] = {}
        for package in collection.members.values():
            self._add(package)

    def _add(self, obj: griffe.Object | griffe.Alias) -> None:
        self.paths[obj.path] = obj
        if not obj.is_alias:
            for member in obj.members.values():
                self._add(member)

    def canonical(self, path: str) -> str | None:
        """Where ``path`` is defined in the project (following imports), or None (unknown, external)."""
        obj = self.paths.get(path)
        if obj is None:
            return None
        if isinstance(obj, griffe.Alias):
            try:
                target = obj.final_target.path
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                return None
            return target if target in self.paths and not self.paths[target].is_alias else None
        return path

    def has_entry(self, path: str) -> bool:
        """Whether the object at ``path`` (not an imported name) has an entry in the API pages: every
        module has a page, and an object is rendered when it and the classes it is in are
        (:func:`documented`)."""
        found = self.paths.get(path)
        if found is None or isinstance(found, griffe.Alias):
            return False
        obj: griffe.Object | None = found
        while obj is not None and not obj.is_module:
            if not documented(obj):
                return False
            obj = obj.parent
        return True

    def resolve(self, target: str, scopes: Sequence[str]) -> str | None:
        """The path of the object a role names, looked up as Sphinx's Python domain does: in each
        scope (innermost first: enclosing classes, the module, its packages), then as a full name;
        a leading ``.`` also matches any object whose path ends so, when only one does."""
        fuzzy = target.startswith(".")
        target = target.lstrip(".")
        for scope in scopes:
            if found := self.canonical(f"{scope}.{target}"):
                return found
        if found := self.canonical(target):
            return found
        if fuzzy:
            matches = {self.canonical(p) for p in self.paths if p.endswith("." + target)} - {None}
            if len(matches) == 1:
                return matches.pop()
        return None


def documented(obj: griffe.Object | griffe.Alias) -> bool:
    """Whether mkdocstrings renders this member of a module or class, with the options of
    ``mkdocs.yml`` (``filters: ["!^_"]``, ``show_if_no_docstring: false``): a public name with a
    docstring (its own or its members'), a name imported into a module only when the module exports
    it (``__all__``); modules are not members of their package's page (each has its own)."""
    if obj.name.startswith("_"):
        return False
    if isinstance(obj, griffe.Alias):
        try:
            return bool(obj.is_exported and not obj.final_target.is_module and obj.final_target.has_docstrings)
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return False
    return not obj.is_module and obj.has_docstrings


def scopes_of(obj: griffe.Object) -> list[str]:
    """Where the names of ``obj``'s docstring are looked up: its enclosing classes (itself if it is a
    class), its module, the module's packages."""
    scopes = []
    current: griffe.Object | None = obj if obj.is_class or obj.is_module else obj.parent
    while current is not None:
        scopes.append(current.path)
        current = current.parent
    return scopes


# --- inline markup ------------------------------------------------------------------------------


def _code(text: str) -> str:
    """A Markdown code span of ``text`` (backticks inside are fenced by longer runs)."""
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def math_inline(tex: str) -> str:
    r"""Inline maths for ``pymdownx.arithmatex`` (``\(...\)``)."""
    return r"\(" + " ".join(tex.split()) + r"\)"


class Renderer:
    """Turns the reST of one object's docstring into Markdown (see the module docstring)."""

    def __init__(self, index: Index, scopes: Sequence[str], citations: dict[str, str]) -> None:
        self.index = index
        self.scopes = list(scopes)
        self.citations = citations  # label -> anchor id, the docstring's and its enclosing ones'
        self.links = 0  # roles that became cross-references
        self.codes = 0  # roles that became code

    def role(self, name: str, text: str) -> str:
        text = " ".join(text.split())
        if name == "math":
            return math_inline(text)
        explicit = re.fullmatch(r"(.+?)\s*<([^<>]+)>", text)
        title, target = explicit.groups() if explicit else (None, text)
        no_link = target.startswith("!")
        target = target.lstrip("!")
        tilde = target.startswith("~")  # ~a.b.c shows c
        target = target.lstrip("~")
        shown = title or (target.rsplit(".", 1)[-1] if tilde else target.lstrip("."))
        if not title and name in CALLABLE_ROLES and not shown.endswith(")"):
            shown += "()"
        known = {"func", "meth", "class", "mod", "data", "attr", "obj", "exc", "const"}
        path = None if no_link or name not in known else self.index.resolve(target, self.scopes)
        if path is None or not self.index.has_entry(path):  # unknown, external, private, undocumented
            self.codes += 1
            return _code(shown)
        self.links += 1
        # optional: should the entry be missing after all, autorefs leaves the code (no warning)
        return f'<autoref identifier="{html.escape(path)}" optional>{_code(shown)}</autoref>'

    def inline(self, text: str) -> str:
        """Roles, maths and citations of running text (code spans are left as they are)."""
        def replace(match: re.Match[str]) -> str:
            if match["role"]:
                return self.role(match["name"], match["text"])
            if match["cite"]:
                anchor = self.citations.get(match["label"])
                return f'<a href="#{anchor}">[{match["label"]}]</a>' if anchor else f"[{match['label']}]"
            return match[0]
        return _INLINE.sub(replace, text)

    # --- blocks ---

    def render(self, text: str) -> str:
        """The Markdown of a whole docstring."""
        lines = text.split("\n")
        out: list[str] = []
        paragraph: list[str] = []  # running text, converted a paragraph at a time (code spans may wrap)
        section = ""  # the NumPy section the line is in

        def flush() -> None:
            if paragraph:
                out.extend(self.inline("\n".join(paragraph)).split("\n"))
                paragraph.clear()

        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                flush()
                out.append(line)
                i += 1
            elif (fence := _FENCE.match(line)) is not None:  # an existing fenced block: copied as it is
                flush()
                end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence[1])), len(lines) - 1)
                out += lines[i:end + 1]
                i = end + 1
            elif (math := _MATH_DIRECTIVE.match(line)) is not None:
                flush()
                i = self._math_block(lines, i, math, out)
            elif (reference := _REFERENCE.match(line)) is not None:
                flush()
                i = self._reference(lines, i, reference, out)
            elif _BORDER.match(line) and (table_end := _table_end(lines, i)) is not None:
                flush()
                out += self._table(lines[i:table_end + 1])
                i = table_end + 1
            elif line.rstrip().endswith("::") and not line.strip().startswith(".."):
                stripped = line.rstrip()
                if stripped.strip() != "::":  # "text::" -> "text:", "text ::" -> "text"
                    paragraph.append(stripped[:-3] if stripped.endswith(" ::") else stripped[:-1])
                flush()
                i = self._literal(lines, i, out)
            elif not paragraph and section not in NAMED_SECTIONS + TYPED_SECTIONS and _is_term(lines, i):
                i = self._definition(lines, i, out)
            else:
                if i + 1 < len(lines) and _DASHES.match(lines[i + 1]):  # a section's title: roles as code, no links
                    section = line.strip().lower()
                    paragraph.append(re.sub(r":(?:py:)?[a-z]+:`~?\.?([^`]+)`", r"`\1`", line))
                elif section in NAMED_SECTIONS:
                    paragraph += _named_item(line)
                elif section in TYPED_SECTIONS and not line.startswith(" ") and not _DASHES.match(line):
                    paragraph.append(plain_type(line))  # a returned value's type (or "name : type")
                else:
                    paragraph.append(line)
                i += 1
        flush()
        return "\n".join(out)

    def _definition(self, lines: list[str], i: int, out: list[str]) -> int:
        """A reST definition list's item (a term, its definition indented below) as ``def_list``'s."""
        pad = lines[i][:_indent(lines[i])]
        end = self._block_end(lines, i, len(pad))
        body = [row for row in lines[i + 1:end]]
        depth = min(_indent(row) for row in body if row.strip())
        definition = self.render("\n".join(row[depth:] for row in body)).split("\n")
        out += [pad + self.inline(lines[i].strip()), pad + ":   " + definition[0]]
        out += [pad + "    " + row if row.strip() else "" for row in definition[1:]]
        out.append("")
        return end

    def _block_end(self, lines: list[str], start: int, indent: int) -> int:
        """The index after the last line of the block that starts below ``start`` and is indented
        deeper than ``indent`` (blank lines inside it included, trailing ones not)."""
        end = start + 1
        last = start
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
            if lines[end].strip():
                last = end
            end += 1
        return last + 1

    def _math_block(self, lines: list[str], i: int, match: re.Match[str], out: list[str]) -> int:
        pad = match[1]
        end = self._block_end(lines, i, len(pad))
        body = [match[2].strip()] + [line.strip() for line in lines[i + 1:end]]
        equations: list[list[str]] = [[]]  # blank lines separate equations, as in Sphinx
        for row in body:
            if row:
                equations[-1].append(row)
            elif equations[-1]:
                equations.append([])
        for equation in (e for e in equations if e):
            out += ["", pad + r"\[", *(pad + row for row in equation), pad + r"\]", ""]
        return end

    def _reference(self, lines: list[str], i: int, match: re.Match[str], out: list[str]) -> int:
        pad, label = match[1], match[2]
        end = self._block_end(lines, i, len(pad))
        text = " ".join([match[3].strip()] + [line.strip() for line in lines[i + 1:end]])
        anchor = self.citations.get(label, "")
        out += [f'{pad}<span id="{anchor}"></span>**[{label}]** {self.inline(text)}', ""]
        return end

    def _literal(self, lines: list[str], i: int, out: list[str]) -> int:
        """The indented block after the paragraph ending in ``::`` at ``lines[i]``, as fenced code."""
        pad = lines[i][:_indent(lines[i])]
        start = i + 1
        while start < len(lines) and not lines[start].strip():
            start += 1
        if start >= len(lines) or _indent(lines[start]) <= len(pad):  # no indented block: not a literal
            return i + 1
        end = self._block_end(lines, start - 1, len(pad))
        block = lines[start:end]
        depth = min(_indent(row) for row in block if row.strip())
        out += ["", pad + "```text", *(pad + row[depth:] if row.strip() else "" for row in block), pad + "```", ""]
        return end

    def _table(self, rows: list[str]) -> list[str]:
        border = _BORDER.match(rows[0])
        assert border is not None, "a table starts at its border"
        pad = border[1]
        starts = [m.start() for m in re.finditer(r"=+", rows[0])]
        borders = [n for n, row in enumerate(rows) if _BORDER.match(row)]
        header_end = borders[1] if len(borders) == 3 else None
        header: list[list[str]] = []
        body: list[list[str]] = []
        for n, row in enumerate(rows):
            if n in borders or not row.strip():
                continue
            cells = _split_row(row, starts)
            target = header if header_end is not None and n < header_end else body
            if target and not cells[0].strip():  # a continuation line (first column blank)
                target[-1] = [f"{a} {b}".strip() for a, b in zip(target[-1], cells)]
            else:
                target.append(cells)
        if not header:
            header = [[""] * len(starts)]
        head = [" ".join(parts).strip() for parts in zip(*header)]
        lines = ["", pad + "| " + " | ".join(self._cell(c) for c in head) + " |", pad + "|" + " --- |" * len(starts)]
        lines += [pad + "| " + " | ".join(self._cell(c) for c in row) + " |" for row in body]
        return lines + [""]

    def _cell(self, text: str) -> str:
        return table_cell(self.inline(text))


def _named_item(line: str) -> list[str]:
    """A ``name : text`` line of a NumPy section, as NumPy reads it (``text`` is the type) unless
    ``text`` is prose, as this project writes it (``x : the number of ...``): then the name alone, the
    prose as the first line of its description."""
    match = _NAMED_ITEM.match(line)
    if match is None:
        return [line]
    text = match[2].strip()
    prose = ("``" in text or re.search(r":[a-z]+:`", text) is not None or text.endswith((".", ",")) or ";" in text
             or text.startswith(("the ", "a ", "an ")) or len(text.split()) > 8)
    return [match[1], "    " + text] if prose else [f"{match[1]} : {plain_type(text)}"]


def plain_type(text: str) -> str:
    """A type as NumPy sections give it, without reST markup (mkdocstrings shows types as code)."""
    text = re.sub(r":(?:py:)?[a-z]+:`~?\.?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def table_cell(markdown: str) -> str:
    r"""Markdown fit for a table cell: pipes escaped, and inside maths written as ``\vert``."""
    def math(match: re.Match[str]) -> str:
        return match[0].replace(r"\|", r"\Vert ").replace("|", r"\vert ")
    markdown = re.sub(r"\\\(.*?\\\)", math, markdown)
    return re.sub(r"(?<!\\)\|", r"\|", markdown)


def _is_term(lines: list[str], i: int) -> bool:
    """Whether ``lines[i]`` is the term of a reST definition list: a line that starts a paragraph,
    is not a list item, and has a more indented line below it."""
    line = lines[i]
    if i + 1 >= len(lines) or not lines[i + 1].strip() or _indent(lines[i + 1]) <= _indent(line):
        return False
    return not re.match(r"\s*(?:[-*+]|\d+[.)]|#\.)\s", line) and not line.rstrip().endswith("::")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _table_end(lines: list[str], start: int) -> int | None:
    """The closing border of the simple table whose first border is ``lines[start]``: the first
    border followed by a blank line or the end."""
    for n in range(start + 1, len(lines)):
        if _BORDER.match(lines[n]) and (n + 1 == len(lines) or not lines[n + 1].strip()):
            return n
    return None


def _split_row(row: str, starts: list[int]) -> list[str]:
    """The cells of a simple table's row. A cell whose text runs past its column's end pushes the
    next column's start to the next whitespace."""
    cells = []
    begin = starts[0]
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(row)
        if k + 1 < len(starts) and end <= len(row) and row[end - 1:end].strip():
            gap = re.search(r"\s+", row[end:])
            end = end + gap.end() if gap else len(row)
        cells.append(row[max(begin, start) if k == 0 else begin:end].strip())
        begin = end
    return cells


# --- the extension ------------------------------------------------------------------------------


def citation_anchors(obj: griffe.Object) -> dict[str, str]:
    """The references a docstring may cite: label -> anchor, its own first, then its enclosing objects'."""
    anchors: dict[str, str] = {}
    current: griffe.Object | None = obj
    while current is not None:
        if current.docstring is not None:
            for line in current.docstring.value.split("\n"):
                if (match := _REFERENCE.match(line)) is not None:
                    anchors.setdefault(match[2], f"{current.path}--ref-{match[2]}")
        current = current.parent
    return anchors


class SphinxToMarkdown(griffe.Extension):
    """mkdocstrings' extension: every docstring of the project's packages rewritten from reST to
    Markdown (the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.name not in project_packages():
            return
        index = project_index()
        described = [obj for obj in walk(pkg) if obj.docstring is not None]
        citations = {obj.path: citation_anchors(obj) for obj in described}  # before any docstring changes
        for obj in described:
            assert obj.docstring is not None
            obj.docstring.value = Renderer(index, scopes_of(obj), citations[obj.path]).render(obj.docstring.value)
