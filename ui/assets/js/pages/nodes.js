// pages/nodes.js: client nodes with status, eligibility, drain, drivers and
// allocated-vs-total CPU, memory and GPUs as bars.
import { watch, url } from '../api.js';
import { setQuery } from '../router.js';
import { h, replace, table, td, pill, link, errorBox, loading, shortId, bar, mhz, mb, nodeCapacity, usageByNode, fmtGPUs } from '../dom.js';

export function render(root, _params, { signal, query }) {
  let nodes = null;
  let allocs = null;
  const errs = {};
  const search = h('input', { type: 'search', placeholder: 'Search by name, ID, datacenter, class', value: query.get('q') || '', 'aria-label': 'Search nodes' });
  const count = h('span', { class: 'sub' });
  const out = h('div', { id: 'nodes' }, loading());
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Nodes'), count), h('div', { class: 'toolbar' }, search), out);

  const draw = () => {
    if (!nodes) {
      replace(out, errs.nodes ? errorBox(errs.nodes, 'Could not list nodes') : loading());
      return;
    }
    const use = usageByNode(allocs || []);
    const q = search.value.trim().toLowerCase();
    const list = nodes.filter((n) => !q || [n.Name, n.ID, n.Datacenter, n.NodeClass, n.NodePool].some((s) => (s || '').toLowerCase().includes(q)))
      .sort((a, b) => a.Name.localeCompare(b.Name));
    count.textContent = `${list.length} of ${nodes.length}`;
    const rows = list.map((n) => {
      const cap = nodeCapacity(n);
      const u = use.get(n.ID) || { cpu: 0, mem: 0, gpus: [], gpuMilli: 0, allocs: [] };
      const drivers = Object.entries(n.Drivers || {}).filter(([, d]) => d.Detected).sort(([a], [b]) => a.localeCompare(b));
      return h('tr', { dataset: { nodeId: n.ID, status: n.Status } },
        td('', link(`/ui/nodes/${n.ID}`, n.Name || shortId(n.ID), { class: 'node-link' }), h('div', { class: 'sub mono' }, shortId(n.ID))),
        td('', pill(n.Status)),
        td('', pill(n.SchedulingEligibility)),
        td('', n.Drain ? pill('draining') : h('span', { class: 'muted' }, 'no')),
        td('opt', n.Datacenter, n.NodePool && n.NodePool !== 'default' ? h('div', { class: 'sub' }, n.NodePool) : null),
        td('wrap opt', drivers.map(([name, d], i) => [i ? ', ' : '', h('span', { class: d.Healthy ? '' : 'muted', title: d.HealthDescription || '' }, name + (d.Healthy ? '' : ' (unhealthy)'))])),
        td('num', u.allocs.length),
        td('', bar(u.cpu, cap.cpu, 'cpu', `${mhz(u.cpu)} / ${mhz(cap.cpu)}`)),
        td('', bar(u.mem, cap.mem, 'mem', `${mb(u.mem)} / ${mb(cap.mem)}`)),
        td('', cap.gpus.length ? bar(u.gpuMilli / 1000, cap.gpus.length, 'gpu', `${fmtGPUs(u.gpuMilli)} / ${cap.gpus.length}`) : h('span', { class: 'muted' }, '–')));
    });
    replace(out, errs.allocs ? errorBox(errs.allocs, 'Could not list allocations (usage bars may be stale)') : null,
      table(['Name', 'Status', 'Eligibility', 'Drain', { label: 'Datacenter', class: 'opt' }, { label: 'Drivers', class: 'opt' },
        { label: 'Allocs', class: 'num' }, 'CPU', 'Memory', 'GPUs'], rows, { id: 'nodes-table', empty: nodes.length ? 'No node matches.' : 'No client nodes have registered.' }));
  };
  search.addEventListener('input', () => {
    setQuery({ q: search.value.trim() });
    draw();
  });
  watch('/v1/nodes', (n) => { nodes = n || []; delete errs.nodes; draw(); }, (e) => { errs.nodes = e; draw(); }, signal, { topics: ['Node'] });
  watch(url('/v1/allocations', { namespace: '*' }), (a) => { allocs = a || []; delete errs.allocs; draw(); }, (e) => { errs.allocs = e; draw(); }, signal, { topics: ['Allocation'] });
}
