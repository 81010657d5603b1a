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
      if (/^[xy]axis[0-9]*$/.test(name) && layout[name] && layout[name].type) { types[name + ".type"] = layout[name].type; }
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
