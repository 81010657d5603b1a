"""The HTML pages: the dashboard's (:data:`PAGE`) and the atlas's (:data:`ATLAS_PAGE`), each a
``string.Template`` (``$name`` placeholders, ``$$`` for ``$``).

Kept in a Python module so that it ships with the package without any package-data setting.
The script draws a plot the first time its container becomes visible, records every script
error in the page's "Warnings" box, and reads/writes the selection in the URL fragment
(``#task=e0&mode=best``, ``mode=epoch5`` for an ASHA rung, ``&view=all`` shows every experiment
in every view) so that a view can be linked to. The view selector is rebuilt for each experiment
from ``VIEWS`` (its views and its default view, :mod:`analysis.data.views`).
"""

PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>
  body { font-family: Helvetica, Arial, sans-serif; margin: 0; color: #222; background: #fafafa; }
  header { position: sticky; top: 0; z-index: 10; background: #fff; border-bottom: 1px solid #ddd;
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
in neither). An ASHA search opens on the highest rung that at least half of its trials reached
(the last epoch counting as the final-epoch view), or its lowest rung when none is; any other
search opens on the final-epoch view; the final-epoch view is always one click away.
Importances (fANOVA and PED-ANOVA, through Optuna) and the marginal effects (a random forest's
partial dependence, a model estimate) are fitted only on views of at least $min_trials trials.
Grid searches have one cell per grid value. Log axes of TPE and random searches have one cell
per decade, centred on it like the paper's grid (0.001, 0.01, 0.1, 1, 10): the cell of
10<sup>k</sup> spans [10<sup>k&minus;&frac12;</sup>, 10<sup>k+&frac12;</sup>), e.g. 0.01 covers
[0.0032, 0.032); hover a cell for its exact interval. A value exactly on a half-decade edge is
in the cell above it (whose lower edge it is), and the searched range's ends are always in the
first and last cells. Empty cells have no trial; the star marks the best trial.</p>
$warnings
<div id="js-errors" class="warnings" hidden><h3>Script errors</h3><ul></ul></div>
<h2>All tasks: best accuracy beside the paper</h2>
<p class="meta">Accuracies in percent; &Delta; is the best final-epoch accuracy minus the paper's
SSOT accuracy. Click a row to open its experiment.</p>
$cross
$sections
</main>
<script type="text/javascript">
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
<script type="text/javascript">$plotlyjs</script>
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
    }, function (error) { window.__dashboardReport(div.id + ": " + error); });
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
    var hash = "#task=" + key + "&mode=" + mode + (everything ? "&view=all" : "");
    try { history.replaceState(null, "", hash); } catch (e) { /* file: URLs in some browsers */ }
  }

  function fromHash() {
    var params = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    var key = params.get("task");
    if (key && select.querySelector('option[value="' + key + '"]')) { select.value = key; }
    chosen = params.get("mode");
    showAll.checked = params.get("view") === "all";
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
ATLAS_PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>
  body { font-family: Helvetica, Arial, sans-serif; margin: 0; color: #222; background: #fafafa; }
  main { padding: 8px 20px 40px; max-width: 1500px; }
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
<script type="text/javascript">
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
<script type="text/javascript">$plotlyjs</script>
$section
</main>
</body>
</html>
"""
