"""The front page and the manual: README.md stays a front page whose two commands come first and
unchanged; the manual builds with `mkdocs build --strict` (a broken link, anchor or missing page
fails); its command reference is generated from every entry point's parser and `ssot/cli.py`; the
docstrings' reST is rendered (no raw Sphinx role), one API page per module, a gallery of every
example, a Cite page from CITATION.cff; no font or script comes from the network (checked in the
HTML and CSS, and in a headless Chromium with the network cut)."""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from ssot import cli
from tests.fixtures import REPO
from tests.fixtures.browser import chromium, chromium_path

README = REPO / "README.md"
#: The two commands a newcomer runs first (set-up + embedded run; the tests, as CI runs them).
FIRST_COMMANDS = [
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m ssot.train --task digits',
    ".venv/bin/python -m pytest -q",
]


def _hooks():
    spec = importlib.util.spec_from_file_location("manual_hooks", REPO / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _docs_module(name: str):
    """A module of docs/ (the manual's hooks import each other as MkDocs loads them: from docs/)."""
    pytest.importorskip("griffe")
    pytest.importorskip("mkdocs")
    sys.path.insert(0, str(REPO / "docs"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "docs"))


def test_readme_is_a_front_page_with_the_two_commands_first():
    text = README.read_text()
    assert len(text.encode()) <= 12 * 1024
    blocks = re.findall(r"```\w*\n(.*?)```", text, flags=re.S)
    assert [b.strip() for b in blocks[:2]] == FIRST_COMMANDS
    assert "## " not in text[:text.index(FIRST_COMMANDS[1])]  # nothing comes before them
    assert ".venv/bin/python -m pytest -q" in (REPO / ".ci" / "run").read_text()  # what CI runs


def test_readme_links_point_into_the_repository():
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    assert len(targets) >= 5, targets  # the README links into docs/ (a pattern that found none would check nothing)
    for target in targets:
        assert "://" not in target and (REPO / target).exists(), target


def test_no_file_outside_the_repository_is_named():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    texts = [REPO / f for f in tracked if f.endswith((".md", ".py", ".toml", ".yml", ".txt")) and (REPO / f).is_file()]
    named = [str(p.relative_to(REPO)) for p in texts if "DESIGN.md" in p.read_text(errors="ignore")
             and p.name != "test_docs.py"]
    assert named == []


def test_the_command_reference_covers_every_entry_point():
    hooks = _hooks()
    scripts = hooks.commands()
    # ssot/cli.py's table of commands lists exactly the entry points of pyproject.toml
    assert [row[0].strip("`") for row in hooks.doc_commands(cli.__doc__)] == list(scripts)
    for module in scripts.values():
        parser = importlib.import_module(module).build_parser()
        assert parser.format_help().startswith("usage: ")
    # the exit statuses rendered are those ssot.cli returns, with the docstring's words
    rows = hooks.doc_exit_statuses(cli.__doc__)
    assert [int(r[0]) for r in rows] == sorted({cli.EXIT_OK, cli.EXIT_FAILED, cli.EXIT_USAGE, cli.EXIT_NO_RESULT,
                                                cli.EXIT_EXTERNAL, cli.EXIT_INTERRUPTED})
    assert rows[2][1].startswith("bad input") and "Every ``main``" not in rows[-1][1]


def _command_parsers() -> tuple[dict[str, str], dict[str, object]]:
    """How the commands are written (``ssot-search``, ``python tune/search.py``, ``python -m
    ssot.train``) -> their module, and each module's parser; the examples' shared parser too."""
    hooks = _hooks()
    forms = dict(hooks.commands())
    forms.update({row[1].strip("`"): forms[row[0].strip("`")] for row in hooks.doc_commands(cli.__doc__)})
    parsers = {module: importlib.import_module(module).build_parser() for module in set(forms.values())}
    sys.path.insert(0, str(REPO / "examples"))
    try:
        parsers["examples"] = importlib.import_module("common").parser("An example.")
    finally:
        sys.path.remove(str(REPO / "examples"))
    return forms, parsers


def _with_subcommands(parser) -> dict[str, object]:
    import argparse

    return {name: sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def _texts() -> dict[Path, str]:
    """README, the manual's pages and the sources' docstrings and comments (where commands are shown)."""
    globs = ("*.md", "docs/**/*.md", "ssot/**/*.py", "tune/**/*.py", "analysis/**/*.py", "examples/*.py", "benchmarks/*.py")
    return {path: path.read_text() for pattern in globs for path in sorted(REPO.glob(pattern))}


def test_every_command_line_shown_uses_flags_the_command_has():
    """Help and manual agree on the flags: every command line written in README, the manual or a
    docstring (``python tune/search.py --task P2I --num-samples 50``) uses only flags its parser
    (or sub-command's) has; a renamed flag (``--workers``, ``--verbose 0``, ``--features-path``)
    left in a page fails here."""
    forms, parsers = _command_parsers()
    written = re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
                         + r")(?![\w/.-])([^`#|\n]*)")
    unknown = []
    for path, text in _texts().items():
        for number, line in enumerate(text.splitlines(), 1):
            for match in written.finditer(line):
                parser = parsers[forms[match.group(1)]]
                words = match.group(2).split()
                parser = _with_subcommands(parser).get(words[0] if words else "", parser)
                for word in words:
                    flag = re.match(r"[\[(]*(--[a-z0-9][a-z0-9-]*)", word)
                    if flag and flag.group(1) not in parser._option_string_actions:
                        unknown.append(f"{path.relative_to(REPO)}:{number}: {match.group(1)} {flag.group(1)}")
    assert unknown == []


def test_the_defaults_the_manual_states_are_the_help_texts():
    """Help and manual agree on the defaults: a default the manual states beside a flag
    ("`--max-failures`, default 2", "`--out` (default `RESULTS/confirmed`)") is the one the help
    shows for that flag in some command ('(default: 2)')."""
    _, parsers = _command_parsers()
    shown: dict[str, set[str]] = {}
    for parser in parsers.values():
        for p in [parser, *_with_subcommands(parser).values()]:
            for action in p._actions:
                text = " ".join(p._get_formatter()._expand_help(action).split()) if action.help else ""
                found = re.search(r"\(default: (.*)\)$", text)
                for flag in action.option_strings:
                    shown.setdefault(flag, set()).add(found.group(1) if found else "")
    stated = re.compile(r"`(--[a-z0-9-]+)[^`]*`[^`.;\n]{0,25}?\bdefault:?\s+(`[^`]+`|\d[\d.e+-]*)")
    checked, wrong = 0, []
    for path, text in _texts().items():
        if path.suffix != ".md":
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for flag, value in stated.findall(line):
                value = value.strip("`").rstrip(".")
                ok = any(re.search(rf"(^|[\s;:(]){re.escape(value)}($|[\s;,)])", s) for s in shown.get(flag, ()))
                checked += 1
                if not ok:
                    wrong.append(f"{path.relative_to(REPO)}:{number}: {flag} default {value}; the help: {shown.get(flag)}")
    assert wrong == [] and checked >= 10




# --- the built manual ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The manual built once with ``mkdocs build --strict`` (a warning fails it: a broken link or
    anchor, a cross-reference that does not resolve, a page missing from the nav)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path_factory.mktemp("manual") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return site


def _pages(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text() for p in site.rglob("*.html")}


def test_the_manual_builds_strict(site):
    commands = (site / "commands" / "index.html").read_text()
    for name, module in _hooks().commands().items():  # every entry point's help, generated from its parser
        prog = importlib.import_module(module).build_parser().prog
        assert f"usage: {prog}" in commands, name
    assert "--tracker {mlflow,tensorboard,wandb-offline}" in commands and "fetch" in commands
    assert "bad input, the user&#39;s to fix" in commands or "bad input, the user's to fix" in commands
    assert 'id="ssot.config.SSOTConfig"' in (site / "api" / "ssot" / "config" / "index.html").read_text()  # API pages from the docstrings
    for page in ("selection", "gpu", "screening", "reliability", "clusters", "tracking", "results/embedded"):
        assert (site / page / "index.html").exists(), page


#: reST that must not reach a page: Sphinx roles (as Markdown leaves them: before a code span or a
#: backtick), directives, reference targets and citations.
RAW_REST = re.compile(r":(?:py:)?[a-z]+:(?:<code>|`)|\.\. (?:math|note|code-block)::|\.\. \[\w+\]|\[\d+\]_")


def test_no_raw_sphinx_markup_reaches_the_manual(site):
    raw = {page: RAW_REST.findall(html) for page, html in _pages(site).items()}
    assert {page: found for page, found in raw.items() if found} == {}
    ot = (site / "api" / "ssot" / "ot" / "index.html").read_text()
    assert ot.count('class="arithmatex"') > 10  # :math: kept for KaTeX
    validators = (site / "api" / "ssot" / "validators" / "index.html").read_text()
    assert '<span id="ssot.validators--ref-5"></span>' in validators  # .. [5] -> an anchored entry
    assert '<a href="#ssot.validators--ref-5">[5]</a>' in validators  # [5]_ in a function -> a link to it
    assert "\\[" in validators and 'class="arithmatex"' in validators  # .. math:: blocks
    # roles became links to the objects' entries: in ssot.cli's docstring, :func:`run` and :class:`ssot.config.SSOTConfig`
    cli_page = (site / "api" / "ssot" / "cli" / "index.html").read_text()
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#ssot\.cli\.run"[^>]*><code>run\(\)</code></a>', cli_page)
    assert re.search(r'href="\.\./config/#ssot\.config\.SSOTConfig"[^>]*><code>ssot\.config\.SSOTConfig</code>', cli_page)
    assert "<table>" in cli_page.split('id="ssot.cli.exit_status"')[0]  # its reST tables became tables


def _project_modules() -> list[str]:
    """Every module of the project's packages, from the files (``pkg/__init__.py`` is ``pkg``)."""
    include = _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    modules = []
    for package in {p.rstrip("*").split(".")[0] for p in include}:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(modules)


def test_every_module_has_a_page_with_a_summary_table(site):
    modules = _project_modules()
    assert len(modules) > 50 and "ssot.ot" in modules and "analysis.dashboard" in modules
    overview = (site / "api" / "index.html").read_text()
    for module in modules:
        page = site / "api" / module.replace(".", "/") / "index.html"  # a module's page is at its path
        assert page.exists(), module
        html = page.read_text()
        assert "<h1" in html and f"<code>{module}</code>" in html, module
        assert f'href="{module.replace(".", "/")}/"' in overview, module  # in the overview's table of modules

    def pages(entries: list) -> list[str]:  # the pages of a nav (entries: a page, {title: page}, {title: [entries]})
        found: list[str] = []
        for entry in entries:
            value = entry if isinstance(entry, str) else next(iter(entry.values()))
            found += pages(value) if isinstance(value, list) else [value]
        return found

    in_nav = pages(_docs_module("api_pages").nav())
    assert sorted(in_nav) == sorted(["api/index.md"] + [f"api/{m.replace('.', '/')}{'/index' if (REPO / m.replace('.', '/')).is_dir() else ''}.md"
                                                       for m in modules])  # in the nav, once each
    ot = (site / "api" / "ssot" / "ot" / "index.html").read_text()
    table = ot.split("</table>")[0]
    assert "<th>name</th>" in table and "<th>summary</th>" in table and "<th>kind</th>" in table
    assert re.search(r'href="#ssot\.ot\.c_transform"><code>c_transform</code></a></td>\s*<td>The \(entropic\) c-transform', table)
    results = (site / "api" / "ssot" / "results" / "index.html").read_text().split("</table>")[0]
    assert 'href="trials/#ssot.results.trials"' in results and "<td>module</td>" in results  # a package lists its modules


def _example_names() -> list[str]:
    return sorted(p.name for p in (REPO / "examples").glob("*.py") if p.name != "common.py")


def test_the_gallery_lists_every_example_with_its_figures_and_results(site):
    gallery = _docs_module("gallery")
    found = gallery.examples()
    assert [e.name for e in found] == _example_names()  # the gallery's idea of an example is tests/test_examples.py's
    page = (site / "examples" / "index.html").read_text()
    for example in found:
        assert f'id="{example.anchor}"' in page and f'href="#{example.anchor}"' in page, example.name
        assert f"python examples/{example.name}" in page, example.name
        assert example.results, f"{example.name}: no page of the manual reports its results"
    by_name = {e.name: e for e in found}
    # figures it writes (an f-string's pattern) and figures its results show
    assert by_name["solvers.py"].figures == ["figures/solvers_digits.png", "figures/solvers_h2p.png", "figures/solvers_p2h.png"]
    assert "figures/p2h_grid.png" in by_name["grid_vs_tpe.py"].figures
    assert 'src="../figures/tsne_p2h.png"' in page
    assert ("results/paper-analyses.md#ot-solvers") in [link for _, link in by_name["solvers.py"].results]


PAPER_TITLE = "Soft-Masked Semi-Dual Optimal Transport for Partial Domain Adaptation"


def test_the_cite_page_and_citation_file(site):
    import yaml

    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    project = _pyproject()["project"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert str(cff["version"]) == project["version"]  # one version: pyproject's
    paper = cff["references"][0]
    assert paper["title"] == PAPER_TITLE and PAPER_TITLE in " ".join(README.read_text().split())
    assert [a["family-names"] for a in paper["authors"]] == ["Zhai", "Ren", "Yan"]
    page = unescape(re.sub(r"<[^>]+>", "", (site / "cite" / "index.html").read_text()))  # text (BibTeX is highlighted)
    assert PAPER_TITLE in page and "Zhai, Yi-Ming and Ren, Chuan-Xian and Yan, Hong" in page
    assert f"version = {{{project['version']}}}" in page
    assert "journal" not in page.lower().replace("its journal, volume, year and doi are not given", "")  # no invented venue


# --- served from the site -----------------------------------------------------------------------

_EXTERNAL = re.compile(r"(?:https?:)?//")


def _tags(html: str, tag: str) -> list[dict[str, str]]:
    return [dict(re.findall(r'([\w-]+)="([^"]*)"', attrs)) for attrs in re.findall(rf"<{tag}\b([^>]*)>", html)]


def test_no_font_or_script_comes_from_the_network(site):
    external = []
    for page, html in _pages(site).items():
        external += [(page, s["src"]) for s in _tags(html, "script") if _EXTERNAL.match(s.get("src", ""))]
        external += [(page, link["href"]) for link in _tags(html, "link")
                     if _EXTERNAL.match(link.get("href", "")) and link.get("rel") in ("stylesheet", "preload", "preconnect", "modulepreload")]
        external += [(page, m) for m in re.findall(r"fonts\.(?:googleapis|gstatic)\.com", html)]
    for css in site.rglob("*.css"):
        text = css.read_text()
        external += [(css.name, m) for m in re.findall(r"@import[^;]*|url\(\s*['\"]?(?:https?:)?//[^)]*\)", text)]
    assert external == []
    # the pages that draw get the vendored scripts, which the site serves
    offline = _docs_module("offline")
    architecture = (site / "architecture" / "index.html").read_text()
    mermaid = "../" + offline.asset("mermaid", "mermaid.min.js")
    assert f'<script src="{mermaid}"></script>' in architecture and (site / offline.asset("mermaid", "mermaid.min.js")).exists()
    ot = (site / "api" / "ssot" / "ot" / "index.html").read_text()
    assert f'src="../../../{offline.asset("katex", "katex.min.js")}"' in ot
    for name, version in offline.VENDORED.items():
        assert (REPO / "docs" / "assets" / "vendor" / f"{name}-{version}" / "LICENSE").exists(), name


# Material draws a diagram in a closed shadow root, which no DOM dump shows: this line, run before
# the theme's script, makes attachShadow hand back the element itself, so the SVG lands in the DOM.
_OPEN_SHADOW = "<script>Element.prototype.attachShadow = function () { return this; };</script>"


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium; .ci/run installs it)")
def test_pages_draw_their_diagram_and_maths_with_the_network_cut(site, tmp_path):
    """Chromium, every host name unresolvable: the architecture diagram becomes an SVG (Mermaid
    from the site: the theme would fetch it from unpkg.com otherwise) and the maths KaTeX's HTML."""
    architecture = site / "architecture" / "index.html"
    probe = architecture.with_name("probe.html")
    probe.write_text(architecture.read_text().replace("<script src=", _OPEN_SHADOW + "<script src=", 1))

    def dom(page: Path) -> str:
        command = [chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   '--host-resolver-rules=MAP * ~NOTFOUND', f"--user-data-dir={tmp_path / page.parent.name}",
                   "--virtual-time-budget=15000", "--dump-dom", page.as_uri()]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    diagram = re.search(r'class="mermaid"[^>]*>\s*(<svg.*?</svg>)', dom(probe), flags=re.S)
    assert diagram is not None and "ssot.results" in diagram[1]  # the diagram, its boxes drawn
    maths = dom(site / "api" / "ssot" / "ot" / "index.html")
    assert maths.count('class="katex"') > 10 and "katex-error" not in maths


# --- the docstrings' reST, rendered -------------------------------------------------------------

_CORE = '''"""The core.

References
----------
.. [1] Someone, A. "A paper."
   A venue, 2020.
"""
from pkg.util import helper as imported

#: The number of things,
#: on two lines.
COUNT = 3
LIMIT = 5  #: A limit.
HIDDEN = 1


class Thing:
    """A thing."""

    def run(self):
        """Run [1]_."""

    def _step(self):
        """A private step."""


def helper():
    """Help."""


def _private():
    """Private."""
'''
_PACKAGE = {
    "__init__.py": '"""A package."""\nfrom pkg.core import Thing\n\n__all__ = ["Thing"]\n',
    "util.py": '"""Utilities."""\n\n\ndef helper():\n    """Help."""\n',
    "core.py": _CORE,
}


@pytest.fixture
def renderer(tmp_path):
    """docs/docstrings.py, a package of its own loaded as the manual loads the project's, and a
    renderer for the docstring of ``pkg.core.Thing.run``."""
    docstrings = _docs_module("docstrings")
    import griffe

    (tmp_path / "pkg").mkdir()
    for name, text in _PACKAGE.items():
        (tmp_path / "pkg" / name).write_text(text)
    loader = griffe.GriffeLoader(search_paths=[str(tmp_path)], docstring_parser="numpy",
                                 extensions=griffe.load_extensions("griffe_sphinx"))
    loader.load("pkg")
    loader.resolve_aliases(implicit=False, external=False)
    collection = loader.modules_collection
    run = collection["pkg.core.Thing.run"]
    index = docstrings.Index(collection)
    return docstrings, collection, docstrings.Renderer(index, docstrings.scopes_of(run), docstrings.citation_anchors(run))


def _link(path: str, shown: str) -> str:
    return f'<autoref identifier="{path}" optional>`{shown}`</autoref>'


def test_roles_resolve_as_sphinx_does_or_become_code(renderer):
    _, _, render = renderer
    cases = {
        ":meth:`run`": _link("pkg.core.Thing.run", "run()"),  # the enclosing class
        ":func:`helper`": _link("pkg.core.helper", "helper()"),  # the module
        ":func:`imported`": _link("pkg.util.helper", "imported()"),  # an imported name: where it is defined
        ":class:`pkg.Thing`": _link("pkg.core.Thing", "pkg.Thing"),  # a re-export
        ":mod:`pkg.util`": _link("pkg.util", "pkg.util"),
        ":func:`~pkg.util.helper`": _link("pkg.util.helper", "helper()"),
        ":func:`.helper`": _link("pkg.core.helper", "helper()"),
        ":data:`COUNT`": _link("pkg.core.COUNT", "COUNT"),  # documented by a #: comment
        ":class:`the thing <Thing>`": _link("pkg.core.Thing", "the thing"),
        ":data:`HIDDEN`": "`HIDDEN`",  # no docstring: no entry on the site
        ":func:`_private`": "`_private()`",
        ":meth:`_step`": "`_step()`",
        ":class:`torch.Tensor`": "`torch.Tensor`",  # external
        ":func:`nowhere`": "`nowhere()`",
        ":ref:`a label`": "`a label`",  # any other role: code
        ":math:`|x|^2`": r"\(|x|^2\)",
        "see [1]_": 'see <a href="#pkg.core--ref-1">[1]</a>',  # the module's reference
        "``:func:`kept` in code``": "``:func:`kept` in code``",
    }
    assert {text: render.inline(text) for text in cases} == cases
    assert (render.links, render.codes) == (9, 6)


_BLOCKS = r"""Intro::

    x = 1
      y = 2

Maths:

.. math:: a = b \\
          + c

=====  ===============
name   what
=====  ===============
``a``  first, long
       and continued
b      :func:`helper`
=====  ===============

Parameters
----------
x : int, optional
    A number.
y : the thing to ``use``; see :func:`helper`.
    More.

Returns
-------
``(n,)`` :class:`Thing`
    Values."""


def test_blocks_become_markdown(renderer):
    docstrings, collection, render = renderer
    helper = _link("pkg.core.helper", "helper()")
    assert render.render(_BLOCKS).split("\n") == [
        "Intro:", "", "```text", "x = 1", "  y = 2", "```", "", "",  # a literal block
        "Maths:", "", "", r"\[", r"a = b \\", "+ c", r"\]", "", "",  # .. math::
        "", "| name | what |", "| --- | --- |", "| ``a`` | first, long and continued |",  # a simple table
        f"| b | {docstrings.table_cell(helper)} |", "", "",
        "Parameters", "----------", "x : int, optional", "    A number.",  # a type stays a type
        "y", f"    the thing to ``use``; see {helper}.", "    More.", "",  # prose is a description
        "Returns", "-------", "(n,) Thing", "    Values."]  # a type without markup (shown as code)
    # #: comments, above an assignment or after it, are the attributes' docstrings
    assert collection["pkg.core.COUNT"].docstring.value == "The number of things,\non two lines."
    assert collection["pkg.core.LIMIT"].docstring.value == "A limit."
    assert collection["pkg.core.HIDDEN"].docstring is None
    module = collection["pkg.core"]
    references = docstrings.Renderer(docstrings.Index(collection), docstrings.scopes_of(module), docstrings.citation_anchors(module))
    assert '<span id="pkg.core--ref-1"></span>**[1]** Someone, A. "A paper." A venue, 2020.' in references.render(module.docstring.value)


def test_a_summary_is_the_first_sentence():
    api_pages = _docs_module("api_pages")
    assert api_pages.first_sentence("One line.\n\nMore.") == "One line."
    assert api_pages.first_sentence("Runs :func:`a.b`. Then ``x. Y`` more.\nSecond line.") == "Runs :func:`a.b`."
    assert api_pages.first_sentence("No full stop at all,\ncontinued") == "No full stop at all, continued"
