"""The HTML pages: the dashboard's (:data:`PAGE`) and the atlas's (:data:`ATLAS_PAGE`), each a
``string.Template`` (``$name`` placeholders, ``$$`` for ``$``).

Kept in a Python module so that it ships with the package without any package-data setting.
The script draws a plot the first time its container becomes visible, records every script
error in the page's "Warnings" box, and reads/writes the selection in the URL fragment
(``#task=e0&mode=best``, ``mode=epoch5`` for an ASHA rung, ``&view=all`` shows every experiment
in every view, ``&trial=ID`` the trial selected in the trial table) so that a view can be linked
to. The view selector is rebuilt for each experiment from ``VIEWS`` (its views and its default
view, :mod:`analysis.data.views`). The trial tables sort by a clicked column header; a clicked row
(or a clicked point of the optimisation history) selects its trial, which every figure carrying
marks (``layout.meta.marks``, :func:`analysis.charts.style.add_marks`) draws in its last trace.
"""

#: The start both pages share, up to their own style rules (``$title``: the page's title).
HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>
  body { font-family: Helvetica, Arial, sans-serif; margin: 0; color: #222; background: #fafafa; }
"""

#: The script both pages share: every script error (and unhandled rejection) listed in the page's
#: "Script errors" box, and ``window.__dashboardReport`` for the page's own reports.
ERROR_SCRIPT = """<script type="text/javascript">
(function () {
  var box = document.getElementById("js-errors");
  function report(message) {
    box.hidden = false;
    var item = document.createElement("li");
    item.textContent = String(message);
    box.querySelector("ul").appendChild(item);
  }
  window.addEventListener("error", function (event) { report(event.message || event); });
  window.addEventListener("unhandledrejection", function (event) { report(event.reason); });
  window.__dashboardReport = report;
})();
</script>
"""

PAGE = HEAD + r"""  header { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid #ddd;
           padding: 10px 20px; display: flex; flex-wrap: wrap; gap: 18px; align-items: center; }
  header h1 { font-size: 18px; margin: 0 12px 0 0; }
  header label { font-size: 14px; }
  main { padding: 8px 20px 40px; }
  .meta { color: #555; font-size: 13px; margin: 2px 0; }
  .mode-label { font-weight: bold; color: #8a3b00; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 14px; }
  .plot { background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; min-height: 460px; }
  .warnings { border: 1px solid #e0a800; background: #fff8e1; padding: 6px 14px; margin: 12px 0;
              border-radius: 4px; font-size: 13px; }
  .warnings h3 { margin: 4px 0; font-size: 15px; }
  #js-errors { border-color: #c00; background: #fdecea; }
  table.cross { border-collapse: collapse; font-size: 13px; background: #fff; }
  table.cross th, table.cross td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
  table.cross th { background: #f0f0f0; }
  table.cross td:nth-child(-n+3) { text-align: left; }
  table.cross tr.pick { cursor: pointer; }
  table.cross tr.pick:hover, table.cross tr.current { background: #eef4ff; }
  td.delta.good { color: #1a7f37; } td.delta.bad { color: #b42318; }
  .config { margin: 10px 0; max-width: 760px; }
  .config-head { font-size: 13px; color: #444; margin-bottom: 2px; }
  .config pre { background: #f4f4f4; border: 1px solid #ddd; padding: 8px; margin: 0;
                max-height: 240px; overflow: auto; font-size: 12px; }
  button.copy { font-size: 12px; margin-left: 8px; }
  .best-line { font-size: 14px; }
  section.experiment { border-top: 2px solid #ccc; margin-top: 18px; }
  h2 small { font-weight: normal; color: #666; font-size: 14px; }
  .partial { border: 2px solid #d97706; background: #fff4e0; padding: 8px 12px; border-radius: 4px;
             font-size: 14px; }
  table.trials, table.rungs, table.regret { border-collapse: collapse; font-size: 13px; background: #fff; }
  table.trials th, table.trials td, table.rungs th, table.rungs td, table.regret th, table.regret td {
    border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
  table.trials th, table.rungs th, table.regret th { background: #f0f0f0; position: sticky; top: 0; }
  table.trials td:nth-child(-n+2), table.regret td:first-child, table.trials td:last-child { text-align: left; }
  table.sortable th { cursor: pointer; user-select: none; }
  table.sortable th[aria-sort="ascending"]::after { content: " \25B2"; font-size: 10px; }
  table.sortable th[aria-sort="descending"]::after { content: " \25BC"; font-size: 10px; }
  table.trials tr.trial-row { cursor: pointer; }
  table.trials tr.trial-row:hover { background: #eef4ff; }
  table.trials tr.selected { background: #ffe3f1 !important; outline: 2px solid #ff1493; }
  table.regret tr.best-row { background: #eaf7ee; font-weight: bold; }
  .table-wrap { max-height: 420px; overflow: auto; display: inline-block; border: 1px solid #e3e3e3; }
  .note { color: #444; font-size: 13px; max-width: 1100px; }
  .note.disagree { border-left: 3px solid #f58518; padding-left: 8px; }
  .budget-note.differs { border: 1px solid #d97706; background: #fff4e0; padding: 6px 10px; border-radius: 4px;
                         font-size: 13px; max-width: 1100px; }
  td.budget { text-align: left !important; font-size: 12px; }
  td.budget .differs { color: #b45309; font-weight: bold; }
  ul.verdicts { margin: 4px 0; }
  .panel { min-width: 0; }
  [hidden] { display: none !important; }
</style>
</head>
<body>
<header>
  <h1>SSOT-Tune sensitivity</h1>
  <label>Experiment <select id="task">$options</select></label>
  <span id="modes" title="which trials and which accuracy every figure uses"></span>
  <label title="every experiment and every view on one page, e.g. to print">
    <input type="checkbox" id="show-all"> show all</label>
  <span class="meta">Showing: <span class="mode-label" id="mode-label">$mode_final</span></span>
</header>
<main>
<p class="meta">Results folder <code>$root</code>, generated $generated.
Views (each figure names its view and its number of trials): <b>epoch R</b>, for every ASHA
rung R (an epoch at which the scheduler compares trials): the accuracy at epoch R of every trial
that reached it, whatever happened to it later, so that trials are compared at one budget;
<b>final epoch</b>: $mode_final; <b>best reached</b>: $mode_best (diverged and errored trials are
in neither). Every search opens on the final-epoch view, the one the tables, the best config and
the best trial use (a search still running whose trials have not reached the last epoch opens on
its highest rung); the rung views are one click away. Accuracies are in percent everywhere.
Importances (fANOVA and PED-ANOVA, through Optuna) $bootstrap; they and the marginal effects (a
random forest's partial dependence, a model estimate) are fitted only on views of at least
$min_trials trials. All heatmaps of a task share one colour scale.
Grid searches have one cell per grid value. Log axes of TPE and random searches have one cell
per decade, centred on it like the paper's grid (0.001, 0.01, 0.1, 1, 10): the cell of
10<sup>k</sup> spans [10<sup>k&minus;&frac12;</sup>, 10<sup>k+&frac12;</sup>), e.g. 0.01 covers
[0.0032, 0.032); hover a cell for its exact interval. A value exactly on a half-decade edge is
in the cell above it (whose lower edge it is), and the searched range's ends are always in the
first and last cells. Empty cells have no trial; the star marks the view's best trial.</p>
$warnings
<div id="js-errors" class="warnings" hidden><h3>Script errors</h3><ul></ul></div>
<h2>All tasks: best accuracy beside the paper</h2>
<p class="meta">Accuracies in percent; &Delta; is the best final-epoch accuracy minus the paper's
SSOT accuracy. Click a row to open its experiment.</p>
$cross
$sections
</main>
""" + ERROR_SCRIPT + r"""<script type="text/javascript">$plotlyjs</script>
<script type="text/javascript">
var FIGURES = $figures;
var MODE_LABELS = $mode_labels;
var VIEWS = $views;
var PLOT_CONFIG = $plot_config;
(function () {
  var select = document.getElementById("task");
  var showAll = document.getElementById("show-all");
  var rendered = {};
  var chosen = null;  // the view picked by a click or the URL; else each experiment's default

  function viewsOf(key) {
    return VIEWS[key] || {"default": "final", "views": []};
  }

  function currentMode(key) {
    var info = viewsOf(key);
    for (var i = 0; i < info.views.length; i++) {
      if (info.views[i].key === chosen) { return chosen; }
    }
    return info["default"];
  }

  function labelOf(key, mode) {
    var views = viewsOf(key).views;
    for (var i = 0; i < views.length; i++) {
      if (views[i].key === mode) { return views[i].label; }
    }
    return MODE_LABELS[mode] || mode;
  }

  function buildSelector(key, mode) {
    var box = document.getElementById("modes");
    box.textContent = "";
    var views = viewsOf(key).views;
    for (var i = 0; i < views.length; i++) {
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "radio"; input.name = "mode"; input.value = views[i].key;
      input.checked = views[i].key === mode;
      input.addEventListener("change", function () { chosen = this.value; update(); });
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + views[i].short + " "));
      if (views[i].key === viewsOf(key)["default"]) { label.title = "this experiment's default view"; }
      box.appendChild(label);
    }
  }

  function isShown(element) {
    return element.offsetParent !== null;
  }

  function draw(div) {
    if (rendered[div.id]) { Plotly.Plots.resize(div); return; }
    var figure = FIGURES[div.id];
    if (!figure) { window.__dashboardReport("no figure data for " + div.id); return; }
    rendered[div.id] = true;
    Plotly.newPlot(div, figure.data, figure.layout || {}, PLOT_CONFIG).then(function () {
      div.setAttribute("data-rendered", "true");
      if (div.id.slice(-8) === "-history") {
        div.on("plotly_click", function (event) {
          var point = event.points && event.points[0];
          if (point && point.customdata) { selectTrial(String(point.customdata[0]), true, div.id.split("-")[0]); }
        });
      }
      markPlot(div);
    }, function (error) { window.__dashboardReport(div.id + ": " + error); });
  }

  var selected = null;  // the trial selected in a trial table, or null
  var selectedKey = null;  // the experiment (e0, ...) whose trial it is

  function markPlot(div) {
    var marks = div.layout && div.layout.meta && div.layout.meta.marks;
    if (!marks || !div.data || !div.data.length) { return; }
    var mine = selected !== null && div.id.split("-")[0] === selectedKey && marks[selected];
    var xy = mine ? marks[selected] : [[], []];
    // restyling x or y re-guesses the axes' types (a category axis would turn linear): keep them
    var types = {}, layout = (FIGURES[div.id] || {}).layout || {};
    for (var name in layout) {
      if (/^[xy]axis[0-9]*$$/.test(name) && layout[name] && layout[name].type) { types[name + ".type"] = layout[name].type; }
    }
    Plotly.update(div, {x: [xy[0]], y: [xy[1]]}, types, [div.data.length - 1]);
    div.setAttribute("data-marked", mine ? selected : "");
  }

  function selectTrial(trial, scroll, key) {
    selected = trial;
    selectedKey = trial === null ? null : key;
    var rows = document.querySelectorAll("table.trials tr.trial-row");
    for (var r = 0; r < rows.length; r++) {
      var on = trial !== null && rows[r].getAttribute("data-trial") === trial &&
        rows[r].closest("table").getAttribute("data-key") === selectedKey;
      rows[r].classList.toggle("selected", on);
      if (on && scroll) { rows[r].scrollIntoView({block: "nearest"}); }
    }
    var plots = document.querySelectorAll(".plot[data-rendered]");
    for (var p = 0; p < plots.length; p++) { markPlot(plots[p]); }
    writeHash();
  }

  function cellValue(row, column, numeric) {
    var cell = row.cells[column];
    var raw = cell ? (cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent) : "";
    if (!numeric) { return raw.toLowerCase(); }
    return raw === "" ? null : parseFloat(raw);
  }

  function sortTable(header) {
    var table = header.closest("table");
    var headers = table.querySelectorAll("th");
    var column = Array.prototype.indexOf.call(headers, header);
    var numeric = header.getAttribute("data-type") === "num";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, column, numeric), y = cellValue(b, column, numeric);
      if (x === null || y === null) { return x === null ? (y === null ? 0 : 1) : -1; }  // missing values last
      var order = x < y ? -1 : (x > y ? 1 : 0);
      return ascending ? order : -order;
    });
    for (var i = 0; i < rows.length; i++) { body.appendChild(rows[i]); }
    for (var h = 0; h < headers.length; h++) { headers[h].removeAttribute("aria-sort"); }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function update() {
    var key = select.value;
    var mode = currentMode(key);
    var everything = showAll.checked;
    buildSelector(key, mode);
    var all = document.querySelectorAll("section.experiment");
    for (var i = 0; i < all.length; i++) {
      all[i].hidden = !everything && all[i].getAttribute("data-key") !== key;
    }
    var modal = document.querySelectorAll("[data-view], p.best-line");
    for (var j = 0; j < modal.length; j++) {
      var view = modal[j].getAttribute("data-view") ||
        (modal[j].className.match(/mode-(\S+)/) || [])[1];
      modal[j].hidden = !everything && view !== mode;
    }
    var rows = document.querySelectorAll("table.cross tr.pick");
    for (var k = 0; k < rows.length; k++) {
      rows[k].classList.toggle("current", rows[k].getAttribute("data-key") === key);
    }
    document.getElementById("mode-label").textContent =
      everything ? "every experiment in every view" : labelOf(key, mode);
    var plots = document.querySelectorAll(".plot");
    for (var p = 0; p < plots.length; p++) { if (isShown(plots[p])) { draw(plots[p]); } }
    selectTrial(selected, false, selectedKey);
  }

  function writeHash() {
    var key = select.value;
    var hash = "#task=" + key + "&mode=" + currentMode(key) + (showAll.checked ? "&view=all" : "") +
      (selected !== null && selectedKey === key ? "&trial=" + encodeURIComponent(selected) : "");
    try { history.replaceState(null, "", hash); } catch (e) { /* file: URLs in some browsers */ }
  }

  function fromHash() {
    var params = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    var key = params.get("task");
    if (key && select.querySelector('option[value="' + key + '"]')) { select.value = key; }
    chosen = params.get("mode");
    showAll.checked = params.get("view") === "all";
    selected = params.get("trial");
    selectedKey = selected === null ? null : select.value;
  }

  select.addEventListener("change", update);
  showAll.addEventListener("change", update);
  var picks = document.querySelectorAll("table.cross tr.pick");
  for (var q = 0; q < picks.length; q++) {
    picks[q].addEventListener("click", function () {
      select.value = this.getAttribute("data-key");
      update();
    });
  }
  var sortable = document.querySelectorAll("table.sortable th");
  for (var t = 0; t < sortable.length; t++) {
    sortable[t].addEventListener("click", function () { sortTable(this); });
  }
  var trialRows = document.querySelectorAll("table.trials tr.trial-row");
  for (var u = 0; u < trialRows.length; u++) {
    trialRows[u].addEventListener("click", function () {
      var trial = this.getAttribute("data-trial");
      var key = this.closest("table").getAttribute("data-key");
      var again = selected === trial && selectedKey === key;
      selectTrial(again ? null : trial, false, key);
    });
  }
  var buttons = document.querySelectorAll("button.copy");
  for (var b = 0; b < buttons.length; b++) {
    buttons[b].addEventListener("click", function () {
      var button = this;
      var text = document.getElementById(button.getAttribute("data-target")).textContent;
      function done() {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
      } else { fallbackCopy(text); done(); }
    });
  }
  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text; document.body.appendChild(area); area.select();
    try { document.execCommand("copy"); } finally { document.body.removeChild(area); }
  }
  window.addEventListener("hashchange", function () { fromHash(); update(); });
  fromHash();
  update();
})();
</script>
</body>
</html>
"""


#: The atlas's own page (``analysis/atlas.py``): the section of :mod:`analysis.dashboard.atlas`,
#: plotly.js inlined, script errors listed in a box as on the dashboard.
ATLAS_PAGE = HEAD + r"""  main { padding: 8px 20px 40px; max-width: 1500px; }
  .meta { color: #555; font-size: 13px; margin: 4px 0; }
  .note { color: #444; font-size: 14px; }
  .warnings { border: 1px solid #e0a800; background: #fff8e1; padding: 6px 14px; margin: 12px 0;
              border-radius: 4px; font-size: 13px; }
  .warnings h3 { margin: 4px 0; font-size: 15px; }
  #js-errors { border-color: #c00; background: #fdecea; }
  table.cross { border-collapse: collapse; font-size: 13px; background: #fff; margin: 6px 0 12px; }
  table.cross th, table.cross td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
  table.cross th { background: #f0f0f0; }
  table.cross td:first-child { text-align: left; }
  .partial { border: 2px solid #d97706; background: #fff4e0; padding: 8px 12px; border-radius: 4px; font-size: 14px; }
  [hidden] { display: none !important; }
</style>
</head>
<body>
<main>
<h1>SSOT-Tune atlas</h1>
<p class="meta">Results <code>$root</code>, generated $generated.</p>
$warnings
<div id="js-errors" class="warnings" hidden><h3>Script errors</h3><ul></ul></div>
""" + ERROR_SCRIPT + r"""<script type="text/javascript">$plotlyjs</script>
$section
</main>
</body>
</html>
"""
