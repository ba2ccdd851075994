(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('bbcheck-data').textContent);
  var W = 1000, X0 = 8, X1 = 992;
  var colors = {}, regionColors = {};
  data.colors.forEach(function (c) { colors[c[0]] = c[1]; });
  data.region_colors.forEach(function (c) { regionColors[c[0]] = c[1]; });
  var markerLetters = { arm: 'A', disarm: 'D', mode: 'M', resume: 'R', end: 'E', other: '\u2022' };
  var markerColors = { arm: '#1e7a3c', disarm: '#b3261e', mode: '#6a3d9a', resume: '#1f77b4', end: '#333', other: '#8a8f98' };

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function num(x) { return Math.round(x * 100) / 100; }
  function fmtBytes(n) {
    if (n < 1024) return n + ' B';
    if (n < 1048576) return num(n / 1024) + ' KiB';
    if (n < 1073741824) return num(n / 1048576) + ' MiB';
    return num(n / 1073741824) + ' GiB';
  }
  function fmtSeconds(us) { return (us / 1e6).toFixed(3) + ' s'; }
  // Scale from [lo, hi] to [X0, X1].
  function scale(lo, hi) {
    var span = hi > lo ? hi - lo : 1;
    return function (v) { return X0 + (v - lo) / span * (X1 - X0); };
  }
  // About n round tick values in [lo, hi].
  function ticks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 2.5, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    var out = [], v = Math.ceil(lo / step) * step;
    for (; v <= hi + step * 1e-9 && out.length < 50; v += step) out.push(v);
    return out;
  }
  // Ticks at round numbers of the unit the labels use (KiB, MiB, ... for offsets).
  function byteTicks(lo, hi) {
    var unit = 1;
    while (unit < 1099511627776 && (hi - lo) / unit >= 4096) unit *= 1024;
    return ticks(lo / unit, hi / unit, 8).map(function (v) { return v * unit; });
  }
  function axis(y, lo, hi, map, label, values) {
    var s = '<line x1="' + X0 + '" x2="' + X1 + '" y1="' + y + '" y2="' + y + '" stroke="#b8bec7"/>';
    (values || ticks(lo, hi, 8)).forEach(function (v) {
      var x = num(map(v));
      s += '<line x1="' + x + '" x2="' + x + '" y1="' + y + '" y2="' + (y + 4) + '" stroke="#b8bec7"/>' +
        '<text x="' + x + '" y="' + (y + 15) + '" text-anchor="' + (x > X1 - 30 ? 'end' : x < X0 + 30 ? 'start' : 'middle') +
        '">' + esc(label(v)) + '</text>';
    });
    return s;
  }
  function spanAttrs(sp, i) {
    return ' class="span" data-span="' + i + '" data-start="' + sp.start + '" data-end="' + sp.end +
      '" data-reason="' + esc(sp.reason) + '" fill="' + (colors[sp.reason] || '#000') + '"';
  }
  function spanTitle(sp) {
    var bytes = sp.end - sp.start;
    var t = '[' + sp.start + '..' + sp.end + ') ' + bytes + (bytes === 1 ? ' byte: ' : ' bytes: ') + sp.reason;
    if (sp.frames_lost) t += '; ' + sp.frames_lost + (sp.frames_lost === 1 ? ' main frame lost' : ' main frames lost');
    if (sp.time_start_us != null && sp.time_end_us != null)
      t += '; flight time ' + fmtSeconds(sp.time_start_us) + ' \u2013 ' + fmtSeconds(sp.time_end_us);
    return '<title>' + esc(t) + '</title>';
  }
  function rect(x0, x1, y, h, attrs, title) {
    var w = Math.max(x1 - x0, 1.5);
    return '<rect x="' + num(x0) + '" y="' + y + '" width="' + num(w) + '" height="' + h + '"' + attrs + '>' +
      (title || '') + '</rect>';
  }
  // A histogram as one filled path: bucket heights scaled to `full` (a share of `norm`).
  function histogram(h, map, y, height, norm, color) {
    if (!h || !h.counts.length) return '';
    var d = '';
    h.counts.forEach(function (c, i) {
      if (!c) return;
      var share = Math.min(c / norm(i), 1), bh = Math.max(share * height, 1.5);
      var a = map(h.origin + i * h.width), b = map(h.origin + (i + 1) * h.width);
      d += 'M' + num(a) + ' ' + num(y + height - bh) + 'H' + num(Math.max(b, a + 0.6)) + 'V' + (y + height) +
        'H' + num(a) + 'Z';
    });
    return '<path d="' + d + '" fill="' + color + '"/>';
  }
  function markers(list, pos, y, top, bottom) {
    var s = '';
    list.forEach(function (m) {
      var v = pos(m);
      if (v == null) return;
      var x = num(v), c = markerColors[m.kind] || '#777';
      s += '<g class="marker" data-kind="' + esc(m.kind) + '"><title>' + esc(m.label + ' at offset ' + m.offset +
        (m.time != null ? ', ' + fmtSeconds(m.time) : '')) + '</title>' +
        '<line x1="' + x + '" x2="' + x + '" y1="' + top + '" y2="' + bottom + '" stroke="' + c +
        '" stroke-width="1" stroke-dasharray="3 2" opacity="0.8"/>' +
        '<circle cx="' + x + '" cy="' + y + '" r="6" fill="' + c + '"/>' +
        '<text class="glyph" x="' + x + '" y="' + (y + 3) + '" text-anchor="middle">' +
        esc(markerLetters[m.kind] || '\u2022') + '</text></g>';
    });
    return s;
  }
  // Suspect spans: frames kept whose values a value rule doubts, drawn in their own colour.
  function suspectOf(session) {
    return (data.suspect || []).filter(function (sp) { return sp.session === session; });
  }
  function suspectAttrs(sp) {
    return ' class="suspect" data-start="' + sp.start + '" data-end="' + sp.end + '" data-rule="' +
      esc(sp.rule) + '" fill="#e0a030"';
  }
  function suspectTitle(sp) {
    return '<title>' + esc('suspect [' + sp.start + '..' + sp.end + '): ' + sp.rule +
      (sp.field ? ', ' + sp.field : '') + '; ' + sp.frames + ' main frames kept, values in doubt') + '</title>';
  }
  function spansOf(session) {
    var out = [];
    data.spans.forEach(function (sp, i) { if (sp.session === session) out.push([sp, i]); });
    return out;
  }
  function open(i, scroll) {
    var row = document.getElementById('span-' + i), dump = document.getElementById('dump-' + i);
    if (!row || !dump) return;
    var show = scroll ? true : dump.hidden;
    dump.hidden = !show;
    row.classList.toggle('open', show);
    row.setAttribute('aria-expanded', String(show));
    if (scroll) row.scrollIntoView({ block: 'center' });
  }

  function drawSession(el, s) {
    var spans = spansOf(s.index), out = '';
    var H = 196;
    // Flight time.
    var lo = s.first_time_us, hi = s.last_time_us;
    spans.forEach(function (p) {
      [p[0].time_start_us, p[0].time_end_us].forEach(function (t) {
        if (t == null) return;
        lo = lo == null ? t : Math.min(lo, t);
        hi = hi == null ? t : Math.max(hi, t);
      });
    });
    var ty = 34, th = 26, dy = ty + th + 2, dh = 8;
    out += '<text class="title" x="' + X0 + '" y="12">Flight time</text>' +
      '<text x="' + (X0 + 72) + '" y="12">' + esc(data.counted) + ' per bucket (flight-controller uptime); corrupt spans below, between the last trusted frame before and the first after</text>';
    out += '<rect x="' + X0 + '" y="' + ty + '" width="' + (X1 - X0) + '" height="' + th + '" fill="#f1f3f6"/>' +
      '<rect x="' + X0 + '" y="' + dy + '" width="' + (X1 - X0) + '" height="' + dh + '" fill="#f1f3f6"/>';
    if (lo == null) {
      out += '<text x="' + (W / 2) + '" y="' + (ty + 21) + '" text-anchor="middle">no flight time: nothing accepted carries a time</text>';
    } else {
      if (hi <= lo) hi = lo + 1;
      var tmap = scale(lo, hi), full = s.frames ? s.frames.full : 1;
      out += histogram(s.frames, tmap, ty, th, function () { return full; }, '#4e79a7');
      spans.forEach(function (p) {
        var sp = p[0], a = sp.time_start_us, b = sp.time_end_us;
        if (a == null && b == null) return;
        if (a == null) a = b;
        if (b == null) b = a;
        out += rect(tmap(a), tmap(b), dy, dh, spanAttrs(sp, p[1]), spanTitle(sp));
      });
      suspectOf(s.index).forEach(function (sp) {
        if (sp.time_start_us == null) return;
        var b = sp.time_end_us == null ? sp.time_start_us : sp.time_end_us;
        out += rect(tmap(sp.time_start_us), tmap(b), dy, dh, suspectAttrs(sp), suspectTitle(sp));
      });
      out += markers(s.markers, function (m) { return m.time == null ? null : tmap(m.time); }, ty - 10, ty - 4, dy + dh);
      out += axis(dy + dh + 3, lo, hi, tmap, function (v) { return (v / 1e6).toFixed(hi - lo < 2e6 ? 3 : 1) + ' s'; });
    }
    // File offsets.
    var oy = 130, oh = 30, ry = oy + oh + 2, rh = 9;
    var omap = scale(s.start, s.end);
    out += '<text class="title" x="' + X0 + '" y="' + (oy - 22) + '">File offset</text>' +
      '<text x="' + (X0 + 72) + '" y="' + (oy - 22) + '">[' + s.start + '..' + s.end + '), share of each bucket in accepted frames; regions below</text>';
    out += '<rect x="' + X0 + '" y="' + oy + '" width="' + (X1 - X0) + '" height="' + oh + '" fill="#f1f3f6"/>';
    if (s.bytes) {
      var width = s.bytes.width;
      out += histogram(s.bytes, omap, oy, oh, function (i) {
        var a = Math.max(s.bytes.origin + i * width, s.start), b = Math.min(s.bytes.origin + (i + 1) * width, s.end);
        return Math.max(b - a, 1);
      }, '#4e79a7');
    }
    s.regions.forEach(function (r) {
      out += rect(omap(r[0]), omap(r[1]), ry, rh, ' class="region" data-kind="' + esc(r[2]) + '" fill="' +
        (regionColors[r[2]] || '#ccc') + '"', '<title>' + esc(r[2] + ' [' + r[0] + '..' + r[1] + ')') + '</title>');
    });
    spans.forEach(function (p) {
      var sp = p[0];
      out += rect(omap(sp.start), omap(sp.end), oy, oh + rh + 2, spanAttrs(sp, p[1]), spanTitle(sp));
    });
    suspectOf(s.index).forEach(function (sp) {
      out += rect(omap(sp.start), omap(sp.end), ry, rh, suspectAttrs(sp), suspectTitle(sp));
    });
    out += markers(s.markers, function (m) { return omap(m.offset); }, oy - 10, oy - 4, oy + oh);
    out += axis(ry + rh + 3, s.start, s.end, omap, fmtBytes, byteTicks(s.start, s.end));
    var notes = [];
    if (s.regions_omitted) notes.push(s.regions_omitted + ' more regions not drawn');
    if (s.markers_omitted) notes.push(s.markers_omitted + ' more events not kept');
    // Notes go on a line of their own, below the axis labels.
    if (notes.length) {
      H += 16;
      out += '<text x="' + X1 + '" y="' + (H - 2) + '" text-anchor="end">' + esc(notes.join('; ')) + '</text>';
    }
    el.innerHTML = '<svg viewBox="0 0 ' + W + ' ' + H + '" role="img" aria-label="session ' + s.index +
      ' timeline">' + out + '</svg>';
  }

  function drawFileMap(el) {
    var H = 58, y = 16, h = 22, map = scale(0, Math.max(data.size, 1)), out = '';
    out += '<rect x="' + X0 + '" y="' + y + '" width="' + (X1 - X0) + '" height="' + h + '" fill="#f1f3f6"/>';
    data.regions.forEach(function (r) {
      out += rect(map(r[0]), map(r[1]), y, h, ' class="region" data-kind="' + esc(r[2]) + '" fill="' +
        (regionColors[r[2]] || '#ccc') + '"', '<title>' + esc(r[2] + ' [' + r[0] + '..' + r[1] + ')') + '</title>');
    });
    data.sessions.forEach(function (s, i) {
      var a = map(s.start), b = map(s.end);
      out += '<a href="#session-' + s.index + '">' + rect(a, b, y, h, ' fill="' + (i % 2 ? '#c9d8e8' : '#dce7f2') +
        '" stroke="#fff"', '<title>session ' + s.index + ' [' + s.start + '..' + s.end + ')</title>');
      if (b - a > 18) out += '<text x="' + num((a + b) / 2) + '" y="' + (y + 15) + '" text-anchor="middle">' + s.index + '</text>';
      out += '</a>';
    });
    data.spans.forEach(function (sp, i) {
      out += rect(map(sp.start), map(sp.end), y - 4, h + 8, spanAttrs(sp, i).replace('class="span"', 'class="span map"'), spanTitle(sp));
    });
    out += '<text class="title" x="' + X0 + '" y="11">Whole file</text><text x="' + (X0 + 72) + '" y="11">sessions (click to jump), corrupt spans in their reason\u2019s colour</text>';
    out += axis(y + h + 4, 0, data.size, map, fmtBytes, byteTicks(0, data.size));
    el.innerHTML = '<svg viewBox="0 0 ' + W + ' ' + (H + 6) + '" role="img" aria-label="file map">' + out + '</svg>';
  }

  drawFileMap(document.getElementById('file-map'));
  data.sessions.forEach(function (s) {
    var el = document.querySelector('.timeline[data-session="' + s.index + '"]');
    if (el) drawSession(el, s);
  });
  document.addEventListener('click', function (e) {
    var t = e.target;
    var shape = t.closest && t.closest('svg .span');
    if (shape) { open(shape.getAttribute('data-span'), true); return; }
    var row = t.closest && t.closest('tr.span-row');
    if (row) open(row.getAttribute('data-span'), false);
  });
  document.addEventListener('keydown', function (e) {
    var row = e.target.closest && e.target.closest('tr.span-row');
    if (row && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); open(row.getAttribute('data-span'), false); }
  });
  var m = /^#span-(\d+)$/.exec(location.hash);
  if (m) open(m[1], true);
  document.documentElement.setAttribute('data-rendered', 'ok');
})();
