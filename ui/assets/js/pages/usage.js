// pages/usage.js: GPU-hours over time per queue, shared GPUs by their
// fraction (GET /v1/usage?by=queue&from=&to=, Unix seconds →
// UsageResponse) as a stacked column chart, the totals per queue, and the
// same range as CSV (&format=csv). ?region=all shows every region's
// ledger (GET /v1/usage?region=all), each queue named "region: queue",
// with the regions that did not answer (no CSV: the answer is JSON only).
import { get, url, delay } from '../api.js';
import { h, replace, table, td, errorBox, loading } from '../dom.js';
import { stackedChart } from './charts.js';
import { setQuery } from '../router.js';

const HOUR = 3600;
const DAY = 24 * HOUR;
// The ranges offered; longer ones are drawn with a column per day.
const ranges = { '24h': 24 * HOUR, '7d': 7 * DAY, '30d': 30 * DAY };
const COLOURS = 8;

// Times are UTC throughout, as the ledger's hourly buckets and the CSV
// are: a day column is a UTC date, whatever the browser's time zone (a
// local day would split hours in zones such as +05:30), and the page
// says so.
const iso = (t) => new Date(t * 1000).toISOString();
const dayLabel = (t) => iso(t).slice(0, 10);
const hourLabel = (t) => `${dayLabel(t)} ${iso(t).slice(11, 16)}`;

// GPU-seconds count shares by their fraction (a quarter of a GPU for an
// hour is 0.25 GPU-hours), so small figures keep two decimals.
const gpuHours = (row) => Object.values(row.GPUSeconds || {}).reduce((n, s) => n + s, 0) / HOUR;
const fmtHours = (n) => (n >= 10 ? n.toFixed(1) : n.toFixed(2));

/** stepOf is a span's column width: a day above three days, else an hour. */
const stepOf = (from, to) => (to - from > 3 * DAY ? DAY : HOUR);

/**
 * span is the range shown ending now (Unix seconds): [from, now) where
 * from starts the UTC day (or hour) that makes the range's columns, the
 * last of which holds now; the range never ends in the future.
 */
export function span(range, nowMs) {
  const now = Math.floor(nowMs / 1000);
  const step = stepOf(0, ranges[range]);
  const n = Math.round(ranges[range] / step);
  return [Math.floor(now / step) * step - (n - 1) * step, now];
}

/**
 * columns groups the rows into the UTC buckets of step seconds that
 * [from, to) touches: every bucket is present (empty ones too), with
 * GPU-hours per key.
 */
export function columns(rows, from, to, step) {
  const out = [];
  const first = Math.floor(from / step) * step;
  for (let t = first; t < to; t += step) {
    out.push({ t, label: step > HOUR ? dayLabel(t) : hourLabel(t), short: step > HOUR ? dayLabel(t).slice(5) : iso(t).slice(11, 16), parts: {} });
  }
  for (const r of rows) {
    const i = Math.floor((r.Bucket - first) / step);
    if (i < 0 || i >= out.length) continue;
    out[i].parts[r.Key] = (out[i].parts[r.Key] || 0) + gpuHours(r);
  }
  return out;
}

export function render(root, _params, { signal, query }) {
  let range = ranges[query.get('range')] ? query.get('range') : '7d';
  const picker = h('div', { class: 'actions', id: 'usage-range', role: 'group', 'aria-label': 'Range' });
  const csv = h('a', { class: 'btn', id: 'usage-csv', download: 'usage-by-queue.csv' }, 'Download CSV');
  const out = h('div', { id: 'usage' }, loading());
  let all = query.get('region') === 'all';
  const regions = h('button', {
    type: 'button', id: 'usage-all-regions', 'aria-pressed': String(all), class: all ? 'primary' : '',
    onclick: () => {
      all = !all;
      setQuery({ region: all ? 'all' : '' });
      regions.setAttribute('aria-pressed', String(all));
      regions.className = all ? 'primary' : '';
      load();
    },
  }, 'All regions');
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Usage'), picker, regions, csv), out);
  let ctl = null; // the request of the range shown: a new range aborts it

  const bounds = () => {
    // Explicit from/to (Unix seconds) in the URL win over the range.
    const qf = Number(query.get('from'));
    const qt = Number(query.get('to'));
    if (qf > 0 && qt > qf) return [qf, qt];
    return span(range, Date.now());
  };

  const draw = (resp, from, to) => {
    // Over every region a queue is "region: queue".
    const rows = (resp?.Rows || []).map((r) => (r.Region ? { ...r, Key: `${r.Region}: ${r.Key}` } : r));
    const missing = resp?.Missing || [];
    const step = stepOf(from, to);
    const totals = {};
    for (const r of rows) {
      const t = totals[r.Key] || (totals[r.Key] = { gpu: 0, cpu: 0, mem: 0, cost: 0, models: {} });
      t.gpu += gpuHours(r);
      t.cpu += (r.CPUCoreSeconds || 0) / HOUR;
      t.mem += (r.MemoryGiBSeconds || 0) / HOUR;
      t.cost += r.Cost || 0;
      for (const [m, s] of Object.entries(r.GPUSeconds || {})) t.models[m] = (t.models[m] || 0) + s / HOUR;
    }
    // Biggest users at the bottom of the stack, with stable colours by name.
    const keys = Object.keys(totals).sort((a, b) => totals[b].gpu - totals[a].gpu || a.localeCompare(b));
    const byName = [...keys].sort();
    const series = keys.map((k) => ({ key: k, label: k, cls: `c${byName.indexOf(k) % COLOURS}` }));
    const anyCost = keys.some((k) => totals[k].cost);
    const cols = columns(rows, from, to, step);
    replace(out,
      missing.length ? h('div', { class: 'notice', id: 'usage-partial' },
        missing.map((m) => `partial: region ${m} did not answer`).join('; ')) : null,
      h('div', { class: 'sub', id: 'usage-span' }, `${hourLabel(from)} – ${hourLabel(to)} UTC, ${step > HOUR ? 'daily (UTC days)' : 'hourly'}`),
      keys.length
        ? h('div', { class: 'panel chart-panel' }, stackedChart(cols, series, {
          id: 'usage-chart', title: 'GPU-hours per queue', fmt: (n) => (n >= 10 ? n.toFixed(0) : n >= 1 ? n.toFixed(1) : n.toFixed(2)), unit: ' GPU-h',
        }))
        : h('div', { class: 'muted', id: 'usage-empty' }, 'No usage recorded in this range.'),
      table(['Queue', { label: 'GPU-hours', class: 'num' }, 'By GPU model', { label: 'CPU core-hours', class: 'num' },
        { label: 'Memory GiB-hours', class: 'num' }, anyCost ? { label: 'Cost', class: 'num' } : null].filter(Boolean),
      keys.map((k) => {
        const t = totals[k];
        return h('tr', { dataset: { queue: k } },
          td('', h('i', { class: `swatch c${byName.indexOf(k) % COLOURS}` }), k),
          td('num gpu-hours', fmtHours(t.gpu)),
          td('wrap', Object.entries(t.models).map(([m, n]) => `${m}: ${fmtHours(n)}`).join(', ') || '–'),
          td('num', t.cpu.toFixed(1)), td('num', t.mem.toFixed(1)),
          anyCost ? td('num', t.cost.toFixed(2)) : null);
      }), { id: 'usage-table', empty: 'No usage in this range.' }),
      h('div', { class: 'sub', id: 'usage-note' }, 'GPU-hours count shared GPUs by their fraction: a quarter of a GPU for an hour is 0.25 GPU-hours.'));
  };

  const load = async () => {
    ctl?.abort();
    ctl = new AbortController();
    const mine = ctl;
    const stop = () => mine.abort();
    signal.addEventListener('abort', stop, { once: true });
    const [from, to] = bounds();
    const q = { by: 'queue', from, to };
    csv.href = url('/v1/usage', { ...q, format: 'csv' });
    csv.hidden = all;
    try {
      const resp = await get(url('/v1/usage', all ? { ...q, region: 'all' } : q), { signal: mine.signal });
      if (!mine.signal.aborted) draw(resp, from, to);
    } catch (e) {
      if (e.name === 'AbortError' || mine.signal.aborted) return;
      replace(out, errorBox(e, 'Could not read the usage'));
    } finally {
      signal.removeEventListener('abort', stop);
    }
  };

  const drawPicker = () => replace(picker, Object.keys(ranges).map((k) => h('button', {
    type: 'button', class: k === range && !query.get('from') ? 'primary' : '', dataset: { range: k },
    'aria-pressed': String(k === range),
    onclick: () => {
      range = k;
      query.delete('from');
      query.delete('to');
      setQuery({ range: k, from: '', to: '' });
      drawPicker();
      load();
    },
  }, `Last ${k}`)));
  drawPicker();
  // The ledger grows by the hour: refresh every minute; leaving the page
  // aborts the request in flight.
  (async () => {
    while (!signal.aborted) {
      await load();
      try {
        await delay(60000, signal);
      } catch {
        return;
      }
    }
  })();
}
