// pages/charts.js: the two SVG charts the Queues and Usage pages draw,
// built as DOM nodes (no inline styles or scripts: the agent's CSP allows
// neither). Colours come from app.css classes (.s-<series>, .c0….c7).
import { h } from '../dom.js';

const NS = 'http://www.w3.org/2000/svg';

/** svg builds an SVG element: attributes are set as they are; children as in h. */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const title = (text) => svg('title', null, text);

/** legend renders [[series, label], …] as coloured keys. */
function legend(items, cls = (s) => `s-${s}`) {
  return h('div', { class: 'legend' }, items.map(([s, label]) => h('span', { class: 'key', dataset: { series: s } },
    h('i', { class: cls(s) }), label)));
}

/**
 * barChart draws grouped horizontal bars: one row per item
 * ({key, label, values: [{series, value, text}], limit}), one bar per value,
 * and a tick at the item's limit when it has one. opts: {id, title, legend, fmt}.
 */
export function barChart(items, { id, title: caption, legend: keys = [], fmt = String } = {}) {
  const labelW = 170;
  const width = 760;
  const barH = 9;
  const rowH = Math.max(1, items[0]?.values.length || 1) * (barH + 2) + 12;
  const max = Math.max(1, ...items.flatMap((it) => [...it.values.map((v) => v.value || 0), it.limit || 0]));
  const scale = (v) => ((width - labelW - 70) * (v || 0)) / max;
  const height = items.length * rowH + 8;
  const rows = items.map((it, i) => {
    const y0 = 6 + i * rowH;
    return svg('g', { class: 'row', dataset: { key: it.key } },
      svg('text', { x: labelW - 8, y: y0 + rowH / 2, class: 'label', 'text-anchor': 'end', 'dominant-baseline': 'middle' }, it.label),
      it.values.map((v, j) => {
        const y = y0 + j * (barH + 2);
        return svg('g', { class: 'bar-item' },
          svg('rect', { x: labelW, y, width: Math.max(scale(v.value), v.value ? 1 : 0), height: barH, class: `s-${v.series}`,
            dataset: { series: v.series, value: v.value || 0 } }, title(`${it.label} ${v.series}: ${v.text ?? fmt(v.value)}`)),
          svg('text', { x: labelW + scale(v.value) + 4, y: y + barH - 1, class: 'value' }, v.text ?? fmt(v.value)));
      }),
      it.limit ? svg('line', { x1: labelW + scale(it.limit), x2: labelW + scale(it.limit), y1: y0 - 2, y2: y0 + rowH - 10,
        class: 's-limit', dataset: { series: 'limit', value: it.limit } }, title(`${it.label} limit: ${fmt(it.limit)}`)) : null);
  });
  return h('figure', { class: 'chart', id },
    h('figcaption', null, caption, legend(keys)),
    svg('svg', { viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img', 'aria-label': caption, preserveAspectRatio: 'xMinYMin meet' }, rows));
}

/**
 * stackedChart draws stacked columns: buckets [{t, label, parts: {series: value}}]
 * in time order, series (the stacking order) [{key, label, cls}].
 * opts: {id, title, fmt, unit}.
 */
export function stackedChart(buckets, series, { id, title: caption, fmt = (n) => n.toFixed(1), unit = '' } = {}) {
  const width = 760;
  const height = 240;
  const left = 48;
  const bottom = 22;
  const plotH = height - bottom - 8;
  const totals = buckets.map((b) => series.reduce((n, s) => n + (b.parts[s.key] || 0), 0));
  const max = Math.max(1e-9, ...totals);
  const colW = (width - left - 4) / Math.max(1, buckets.length);
  const y = (v) => 8 + plotH - (plotH * v) / max;
  const ticks = [0, 0.5, 1].map((f) => svg('g', { class: 'tick' },
    svg('line', { x1: left, x2: width - 4, y1: y(max * f), y2: y(max * f) }),
    svg('text', { x: left - 4, y: y(max * f), 'text-anchor': 'end', 'dominant-baseline': 'middle' }, fmt(max * f))));
  const every = Math.max(1, Math.ceil(buckets.length / 8));
  const cols = buckets.map((b, i) => {
    let acc = 0;
    const x = left + i * colW;
    return svg('g', { class: 'col', dataset: { t: b.t, label: b.label, total: totals[i].toFixed(3) } },
      series.map((s) => {
        const v = b.parts[s.key] || 0;
        if (!v) return null;
        const r = svg('rect', { x: x + 0.5, width: Math.max(colW - 1, 0.5), y: y(acc + v), height: y(acc) - y(acc + v),
          class: s.cls, dataset: { series: s.key, value: v.toFixed(3) } }, title(`${b.label} · ${s.label}: ${fmt(v)}${unit}`));
        acc += v;
        return r;
      }),
      i % every === 0 ? svg('text', { x: x + colW / 2, y: height - 6, class: 'axis', 'text-anchor': 'middle' }, b.short || b.label) : null);
  });
  return h('figure', { class: 'chart', id },
    h('figcaption', null, caption, legend(series.map((s) => [s.key, s.label]), (k) => series.find((s) => s.key === k)?.cls || '')),
    svg('svg', { viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img', 'aria-label': caption }, ticks, cols));
}
