// pages/topology.js: every node as a box sized by its capacity and filled by
// its allocated CPU, memory and GPUs, grouped by datacenter, with cluster totals.
import { watch, url } from '../api.js';
import { h, replace, errorBox, loading, bar, mhz, mb, nodeCapacity, usageByNode, stat, shortId, allocResources, fmtGPUs } from '../dom.js';

export function render(root, _params, { signal }) {
  let nodes = null;
  let allocs = null;
  const errs = {};
  const totals = h('div', { class: 'stats', id: 'cluster-totals' });
  const out = h('div', { id: 'topology' }, loading());
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Cluster topology'),
    h('span', { class: 'sub' }, 'Each box is a node; wider boxes have more memory. Each coloured block is a live allocation (one colour per job), so free space and fragmentation show at a glance.')), totals, out);

  const draw = () => {
    if (!nodes) {
      replace(out, errs.nodes ? errorBox(errs.nodes, 'Could not list nodes') : loading());
      return;
    }
    const use = usageByNode(allocs || []);
    const t = { cpu: 0, cpuUsed: 0, mem: 0, memUsed: 0, gpu: 0, gpuUsed: 0, ready: 0, allocs: 0 }; // gpuUsed: thousandths
    const maxMem = Math.max(1, ...nodes.map((n) => nodeCapacity(n).mem));
    const byDc = new Map();
    for (const n of [...nodes].sort((a, b) => a.Name.localeCompare(b.Name))) {
      const cap = nodeCapacity(n);
      const u = use.get(n.ID) || { cpu: 0, mem: 0, gpus: [], gpuMilli: 0, allocs: [] };
      if (n.Status === 'ready') {
        t.ready++;
        t.cpu += cap.cpu;
        t.mem += cap.mem;
        t.gpu += cap.gpus.length;
      }
      t.cpuUsed += u.cpu;
      t.memUsed += u.mem;
      t.gpuUsed += u.gpuMilli;
      t.allocs += u.allocs.length;
      const used = new Set(u.gpus);
      // Width grows with the square root of memory so small nodes stay legible.
      const w = Math.round(150 + 170 * Math.sqrt(cap.mem / maxMem));
      const box = h('a', {
        class: `nodebox ${n.Status === 'ready' ? '' : 'down'}`, href: `/ui/nodes/${n.ID}`, dataset: { nodeId: n.ID },
        title: `${n.Name} (${n.Status}, ${n.SchedulingEligibility})`,
      },
      h('div', { class: 'name' }, n.Name || shortId(n.ID)),
      h('div', { class: 'sub' }, `${u.allocs.length} alloc${u.allocs.length === 1 ? '' : 's'} · ${n.Status}${n.SchedulingEligibility === 'ineligible' ? ' · ineligible' : ''}`),
      strip('cpu', u.allocs, cap.cpu, (r) => r.cpu, `${mhz(u.cpu)} / ${mhz(cap.cpu)}`),
      strip('mem', u.allocs, cap.mem, (r) => r.mem, `${mb(u.mem)} / ${mb(cap.mem)}`),
      cap.gpus.length ? h('div', { class: 'strip-label' }, h('span', null, 'gpu'), h('span', null, `${fmtGPUs(u.gpuMilli)} / ${cap.gpus.length}`)) : null,
      cap.gpus.length ? h('div', { class: 'gpus', title: 'GPUs: filled = allocated' }, cap.gpus.map((g) => h('i', { class: used.has(g.ID) ? 'used' : g.Healthy ? '' : 'sick', title: `${g.ID}${used.has(g.ID) ? ' (allocated)' : ''}` }))) : null);
      box.style.width = `${w}px`;
      const dc = n.Datacenter || '–';
      if (!byDc.has(dc)) byDc.set(dc, []);
      byDc.get(dc).push(box);
    }
    replace(totals,
      stat(`${t.ready} / ${nodes.length}`, 'nodes ready'),
      stat(String(t.allocs), 'live allocations'),
      h('div', { class: 'stat' }, h('span', null, 'CPU'), bar(t.cpuUsed, t.cpu, 'cpu', `${mhz(t.cpuUsed)} / ${mhz(t.cpu)}`)),
      h('div', { class: 'stat' }, h('span', null, 'Memory'), bar(t.memUsed, t.mem, 'mem', `${mb(t.memUsed)} / ${mb(t.mem)}`)),
      h('div', { class: 'stat' }, h('span', null, 'GPUs'), t.gpu ? bar(t.gpuUsed / 1000, t.gpu, 'gpu', `${fmtGPUs(t.gpuUsed)} / ${t.gpu}`) : h('b', null, 'none')));
    replace(out, errs.allocs ? errorBox(errs.allocs, 'Could not list allocations (fill may be stale)') : null,
      legend([...use.values()].flatMap((u) => u.allocs)),
      nodes.length ? [...byDc.entries()].map(([dc, boxes]) => h('div', { class: 'dc' }, h('h3', null, `Datacenter ${dc} · ${boxes.length} node${boxes.length === 1 ? '' : 's'}`), h('div', { class: 'boxes' }, boxes)))
        : h('div', { class: 'empty' }, 'No client nodes have registered.'));
  };

  watch('/v1/nodes', (n) => { nodes = n || []; delete errs.nodes; draw(); }, (e) => { errs.nodes = e; draw(); }, signal, { topics: ['Node'] });
  watch(url('/v1/allocations', { namespace: '*' }), (a) => { allocs = a || []; delete errs.allocs; draw(); }, (e) => { errs.allocs = e; draw(); }, signal, { topics: ['Allocation'] });
}

// strip draws one resource of a node as a bin: each live allocation is a
// block as wide as its share, coloured by job, so free space and its
// fragmentation show at a glance.
function strip(kind, allocs, total, pick, label) {
  const usedSum = allocs.reduce((n, a) => n + pick(allocResources(a.AllocatedResources)), 0);
  const pct = total > 0 ? Math.min(100, (usedSum / total) * 100) : 0;
  const el = h('div', { class: `strip ${kind}`, dataset: { pct: pct.toFixed(1) }, role: 'meter', 'aria-label': kind,
    'aria-valuemin': '0', 'aria-valuemax': String(total), 'aria-valuenow': String(usedSum), title: `${kind}: ${pct.toFixed(0)}% allocated` },
  allocs.map((a) => {
    const v = pick(allocResources(a.AllocatedResources));
    const i = h('i', { title: `${a.Name} · ${kind === 'cpu' ? mhz(v) : mb(v)}` });
    i.style.width = `${total > 0 ? Math.max(0.5, (v / total) * 100) : 0}%`;
    i.style.background = colour(a.JobID);
    return i;
  }));
  return [h('div', { class: 'strip-label' }, h('span', null, kind), h('span', null, label)), el];
}

// legend names what the boxes' colours mean: one swatch per job with live
// allocations (the strips' blocks) and the GPU squares' three states.
function legend(live) {
  const jobs = [...new Set(live.map((a) => a.JobID))].sort();
  const key = (swatch, text, attrs = {}) => h('span', { class: 'key', ...attrs }, swatch, text);
  const sw = (bg) => {
    const i = h('i', { class: 'swatch' });
    i.style.background = bg;
    return i;
  };
  return h('div', { class: 'panel', id: 'topology-legend' },
    h('div', { class: 'legend' }, h('b', null, 'Jobs'),
      jobs.length ? jobs.map((j) => key(sw(colour(j)), j, { dataset: { jobId: j } })) : h('span', null, 'no live allocations')),
    h('div', { class: 'legend' }, h('b', null, 'Strips'), h('span', null, 'cpu / mem: one block per live allocation, as wide as its share; grey is free'),
      h('b', null, 'GPUs'), key(sw('var(--gpu)'), 'allocated'), key(sw('#e9edf1'), 'free'), key(sw('var(--bad)'), 'unhealthy')));
}

// colour gives each job a stable hue.
function colour(s) {
  let x = 0;
  for (const c of String(s)) x = (x * 31 + c.charCodeAt(0)) >>> 0;
  return `hsl(${x % 360} 55% 50%)`;
}
