// pages/queues.js: the queues (GET /v1/queues → []QueueStatus): per queue
// its guarantee, fair share, what it holds and what waits, as a table and a
// bar chart of one resource (GPUs, CPU or memory). ?region=all shows every
// region's queues (GET /v1/queues?region=all → QueueStatusesAll), each
// named "region: queue", with the regions that did not answer.
import { get, url, onEvents, delay } from '../api.js';
import { h, replace, table, td, errorBox, loading, mhz, mb } from '../dom.js';
import { barChart } from './charts.js';
import { setQuery } from '../router.js';

// The resources a queue is measured in: how to read one from a
// QueueResources and how to print it.
const resources = {
  gpu: { label: 'GPUs', of: (r) => r?.GPUs || 0, fmt: (n) => String(n) },
  cpu: { label: 'CPU', of: (r) => r?.CPU || 0, fmt: mhz },
  memory: { label: 'Memory', of: (r) => r?.MemoryMB || 0, fmt: mb },
};

/** depth is a queue's level in the name tree ("team-a/train" is 1). */
const depth = (name) => (name.match(/\//g) || []).length;

export function render(root, _params, { signal, query }) {
  let res = resources[query.get('resource')] ? query.get('resource') : '';
  let data = null;
  let err = null;
  let all = query.get('region') === 'all';
  let missing = [];
  const picker = h('div', { class: 'actions', id: 'queues-resource', role: 'group', 'aria-label': 'Resource' });
  const regions = h('button', {
    type: 'button', id: 'queues-all-regions', 'aria-pressed': String(all), class: all ? 'primary' : '',
    onclick: () => {
      all = !all;
      setQuery({ region: all ? 'all' : '' });
      regions.setAttribute('aria-pressed', String(all));
      regions.className = all ? 'primary' : '';
      data = null;
      draw();
      load();
    },
  }, 'All regions');
  const out = h('div', { id: 'queues' }, loading());
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Queues'), picker, regions), out);
  // A queue's name as shown: with its region in the all-regions view.
  const nameOf = (s) => (s.Region ? `${s.Region}: ${s.Queue.Name}` : s.Queue.Name);

  const draw = () => {
    if (!data) {
      replace(out, err ? errorBox(err, 'Could not list the queues') : loading());
      return;
    }
    const qs = [...data].filter((s) => s?.Queue).sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
    // GPUs when any queue speaks of them, else CPU.
    const key = res || (qs.some((s) => resources.gpu.of(s.Allocated) || resources.gpu.of(s.Queue.Guaranteed)
      || resources.gpu.of(s.Queue.Limit) || resources.gpu.of(s.FairShare)) ? 'gpu' : 'cpu');
    const r = resources[key];
    replace(picker, Object.entries(resources).map(([k, v]) => h('button', {
      type: 'button', class: k === key ? 'primary' : '', dataset: { resource: k }, 'aria-pressed': String(k === key),
      onclick: () => { res = k; setQuery({ resource: k }); draw(); },
    }, v.label)));
    const chart = barChart(qs.map((s) => ({
      key: nameOf(s),
      label: nameOf(s),
      values: [
        { series: 'guaranteed', value: r.of(s.Queue.Guaranteed), text: r.fmt(r.of(s.Queue.Guaranteed)) },
        { series: 'fair', value: r.of(s.FairShare), text: s.FairShare ? r.fmt(r.of(s.FairShare)) : 'not computed' },
        { series: 'allocated', value: r.of(s.Allocated), text: r.fmt(r.of(s.Allocated)) },
      ],
      limit: s.Queue.Limit ? r.of(s.Queue.Limit) : 0,
    })), {
      id: 'queues-chart',
      title: `${r.label} per queue: guarantee, fair share and allocated`,
      legend: [['guaranteed', 'Guaranteed'], ['fair', 'Fair share'], ['allocated', 'Allocated'], ['limit', 'Limit']],
      fmt: r.fmt,
    });
    const gpuModels = (q) => Object.entries(q?.GPUsByModel || {}).map(([m, n]) => `${n}× ${m}`).join(', ');
    const cell = (q, cls = 'num') => td(cls, q ? r.fmt(r.of(q)) : '–');
    const rows = qs.map((s) => h('tr', { dataset: { queue: s.Queue.Name, region: s.Region || '' } },
      td('', h('span', { class: `queue-name d${Math.min(depth(s.Queue.Name), 4)}` }, nameOf(s)),
        s.Queue.Description ? h('div', { class: 'sub' }, s.Queue.Description) : null),
      td('num', s.Queue.Weight || 1),
      td('num opt', s.Queue.Priority || 0),
      cell(s.Queue.Guaranteed),
      cell(s.FairShare),
      td('num', h('span', { class: 'allocated' }, r.fmt(r.of(s.Allocated))),
        key === 'gpu' && gpuModels(s.Allocated) ? h('div', { class: 'sub' }, gpuModels(s.Allocated)) : null),
      cell(s.Queue.Limit),
      td('num', h('span', { class: s.PendingJobs ? 'pending warn' : 'pending' }, String(s.PendingJobs || 0))),
      td('num', s.RunningAllocs || 0)));
    replace(out,
      err ? errorBox(err, 'Could not refresh the queues (showing the last answer)') : null,
      missing.length ? h('div', { class: 'notice', id: 'queues-partial' },
        missing.map((m) => `partial: region ${m} did not answer`).join('; ')) : null,
      qs.length ? h('div', { class: 'panel chart-panel' }, chart) : null,
      table(['Queue', { label: 'Weight', class: 'num' }, { label: 'Priority', class: 'num opt' },
        { label: `Guaranteed ${r.label}`, class: 'num' }, { label: 'Fair share', class: 'num' },
        { label: 'Allocated', class: 'num' }, { label: 'Limit', class: 'num' }, { label: 'Pending jobs', class: 'num' },
        { label: 'Running allocs', class: 'num' }], rows,
      { id: 'queues-table', empty: 'No queues. Create one with `drover queue apply queue.hcl`.' }));
  };

  const load = async () => {
    try {
      if (all) {
        const resp = await get(url('/v1/queues', { region: 'all' }), { signal });
        data = resp?.Queues || [];
        missing = resp?.Missing || [];
      } else {
        data = (await get('/v1/queues', { signal })) || [];
        missing = [];
      }
      err = null;
    } catch (e) {
      if (e.name === 'AbortError' || signal.aborted) return;
      err = e;
    }
    if (!signal.aborted) draw();
  };
  // Queue usage changes with every placement: refresh every 5 s and when
  // the event stream reconnects. Leaving the page aborts the request.
  (async () => {
    while (!signal.aborted) {
      await load();
      try {
        await delay(5000, signal);
      } catch {
        return;
      }
    }
  })();
  const off = onEvents(['Reconnect'], () => { load(); });
  signal.addEventListener('abort', off);
}
