// Run report interaction: a cursor that follows the mouse over the
// timeline, and a panel listing the trace events near the instant clicked
// (or near a violation chosen from the list). Runs offline; reads the
// trace from the JSON block the page embeds.
(function () {
  'use strict';
  var svg = document.getElementById('timeline');
  var dataBlock = document.getElementById('trace-data');
  if (!svg || !dataBlock) { return; }
  var trace = JSON.parse(dataBlock.textContent);
  var endNs = Number(svg.getAttribute('data-end-ns')) || 1;
  var left = Number(svg.getAttribute('data-left'));
  var plotWidth = Number(svg.getAttribute('data-plot-width'));
  var cursor = document.getElementById('cursor');
  var readout = document.getElementById('readout');
  var body = document.querySelector('#near-events tbody');
  var nearTime = document.getElementById('near-time');
  var filterBox = document.getElementById('filter');
  var shown = trace;
  var selectedNs = null;
  var NS = 'http://www.w3.org/2000/svg';
  var selectedLine = document.createElementNS(NS, 'line');
  selectedLine.setAttribute('class', 'selected-time');
  selectedLine.setAttribute('y1', '0');
  selectedLine.setAttribute('y2', svg.viewBox.baseVal.height);
  selectedLine.setAttribute('visibility', 'hidden');
  // Under the violation badges, so a selected violation's number stays readable.
  svg.insertBefore(selectedLine, document.getElementById('violations') || cursor);

  function secs(ns) { return (ns / 1e9).toFixed(6) + 's'; }
  function xOf(ns) { return left + (ns / endNs) * plotWidth; }
  function timeAt(evt) {
    var pt = svg.createSVGPoint();
    pt.x = evt.clientX; pt.y = evt.clientY;
    var p = pt.matrixTransform(svg.getScreenCTM().inverse());
    var f = (p.x - left) / plotWidth;
    return Math.round(Math.min(1, Math.max(0, f)) * endNs);
  }
  // First index whose time is at least ns.
  function lowerBound(list, ns) {
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (list[mid][0] < ns) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  }
  function cell(tr, text, cls) {
    var td = document.createElement('td');
    td.textContent = text;
    if (cls) { td.className = cls; }
    tr.appendChild(td);
  }
  function showNear(ns) {
    selectedNs = ns;
    selectedLine.setAttribute('x1', xOf(ns));
    selectedLine.setAttribute('x2', xOf(ns));
    selectedLine.setAttribute('visibility', 'visible');
    nearTime.textContent = secs(ns);
    var i = lowerBound(shown, ns);
    var from = Math.max(0, i - 15), to = Math.min(shown.length, i + 25);
    body.textContent = '';
    if (shown.length === 0) {
      var tr = document.createElement('tr');
      cell(tr, 'no trace events match', 'text');
      body.appendChild(tr);
      return;
    }
    var here = null;
    for (var k = from; k < to; k++) {
      var e = shown[k];
      var row = document.createElement('tr');
      row.className = k < i ? 'before' : 'after';
      if (k === i || (i === shown.length && k === shown.length - 1)) { row.className = 'here'; here = row; }
      cell(row, secs(e[0]));
      var deltaMs = (e[0] - ns) / 1e6;
      cell(row, (deltaMs >= 0 ? '+' : '') + deltaMs.toFixed(3) + 'ms');
      cell(row, e[1]);
      cell(row, e[2], 'text');
      body.appendChild(row);
    }
    // Scroll the panel only, never the page: the reader keeps their place.
    var box = document.getElementById('near-scroll');
    if (here && box) { box.scrollTop = Math.max(0, here.offsetTop - box.clientHeight / 2); }
  }
  function selectViolation(id) {
    var all = document.querySelectorAll('.violation.selected, #violation-list li.selected');
    for (var k = 0; k < all.length; k++) { all[k].classList.remove('selected'); }
    var mark = document.getElementById(id);
    if (!mark) { return; }
    mark.classList.add('selected');
    var item = document.querySelector('#violation-list li[data-target="' + id + '"]');
    if (item) { item.classList.add('selected'); }
    showNear(Number(mark.getAttribute('data-at-ns')));
  }

  svg.addEventListener('mousemove', function (evt) {
    var ns = timeAt(evt);
    var x = xOf(ns);
    cursor.setAttribute('x1', x); cursor.setAttribute('x2', x);
    cursor.setAttribute('visibility', 'visible');
    readout.textContent = 'cursor ' + secs(ns);
  });
  svg.addEventListener('mouseleave', function () { cursor.setAttribute('visibility', 'hidden'); });
  svg.addEventListener('click', function (evt) {
    var v = evt.target.closest ? evt.target.closest('.violation') : null;
    if (v) { selectViolation(v.id); return; }
    var instant = evt.target.closest ? evt.target.closest('[data-at-ns]') : null;
    showNear(instant ? Number(instant.getAttribute('data-at-ns')) : timeAt(evt));
  });
  var items = document.querySelectorAll('#violation-list li[data-target]');
  for (var k = 0; k < items.length; k++) {
    items[k].addEventListener('click', function () { selectViolation(this.getAttribute('data-target')); });
  }
  filterBox.addEventListener('input', function () {
    var words = filterBox.value.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
    shown = words.length === 0 ? trace : trace.filter(function (e) {
      var line = (e[1] + ' ' + e[2]).toLowerCase();
      return words.every(function (w) { return line.indexOf(w) >= 0; });
    });
    showNear(selectedNs === null ? 0 : selectedNs);
  });
  var zoom = 1;
  var chart = document.getElementById('chart');
  function setZoom(z) {
    zoom = Math.max(1, Math.min(16, z));
    svg.style.width = (zoom * 100) + '%';
    document.getElementById('zoom-level').textContent = zoom + '×';
    if (selectedNs !== null) { chart.scrollLeft = (selectedNs / endNs) * chart.scrollWidth - chart.clientWidth / 2; }
  }
  document.getElementById('zoom-in').addEventListener('click', function () { setZoom(zoom * 2); });
  document.getElementById('zoom-out').addEventListener('click', function () { setZoom(zoom / 2); });

  var near = document.getElementById('near');
  document.getElementById('near-toggle').addEventListener('click', function () {
    near.classList.toggle('collapsed');
    this.textContent = near.classList.contains('collapsed') ? 'show' : 'hide';
  });

  var first = svg.querySelector('.violation[id]');
  if (first) { selectViolation(first.id); } else { showNear(0); }
})();
