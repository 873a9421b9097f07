// pages/node.js: one node: attributes, drivers' health, devices (GPUs with
// who holds each, the shares of shared ones and their free part, and the
// NVLink/PCIe topology matrix), allocations, events, and the
// drain/eligibility toggles.
import { watch, get, post, url } from '../api.js';
import {
  h, replace, table, td, pill, link, when, errorBox, loading, enc, shortId, kv, bar, mhz, mb, nodeCapacity, usageByNode, restarts,
  allocResources, fmtGPUs, shareGrant,
} from '../dom.js';

// fullID is the length of a node ID; a shorter one in the URL is a prefix.
const fullID = 36;

/**
 * render shows the node named by the URL. A short ID (a prefix, as the CLI
 * prints) is resolved through GET /v1/nodes?prefix= and the URL is
 * rewritten to the full ID; an ambiguous prefix lists its matches.
 */
export function render(root, { id }, ctx) {
  if (id.length >= fullID) return show(root, id, ctx);
  root.append(loading());
  get(url('/v1/nodes', { prefix: id }), { signal: ctx.signal }).then((nodes) => {
    if (ctx.signal.aborted) return;
    nodes = nodes || [];
    if (nodes.length === 1) {
      history.replaceState(null, '', `/ui/nodes/${nodes[0].ID}${location.search}`);
      replace(root);
      show(root, nodes[0].ID, ctx);
      return;
    }
    replace(root, h('div', { class: 'sub' }, link('/ui/nodes', 'Nodes'), ' / ', id),
      nodes.length
        ? h('div', { id: 'node-matches' }, h('p', null, `${nodes.length} nodes have IDs starting with ${id}:`),
          table(['ID', 'Name'], nodes.map((n) => [link(`/ui/nodes/${n.ID}`, n.ID, { class: 'mono node-link' }), n.Name])))
        : h('div', { class: 'error', role: 'alert' }, `node "${id}" not found: no node ID starts with it.`));
  }, (e) => {
    if (!ctx.signal.aborted) replace(root, errorBox(e, 'Could not look the node up'));
  });
}

function show(root, id, { signal }) {
  let node = null;
  let allocs = null;
  const errs = {};
  const head = h('div', { class: 'page-head' }, h('h1', null, `Node ${shortId(id)}`));
  const note = h('div', { id: 'node-note' });
  const body = h('div', { id: 'node' }, loading());
  const attrFilter = h('input', { type: 'search', placeholder: 'Filter attributes', 'aria-label': 'Filter attributes' });
  root.append(h('div', { class: 'sub' }, link('/ui/nodes', 'Nodes'), ' / ', shortId(id)), head, note, body);

  const act = async (what, path, payload) => {
    replace(note);
    try {
      await post(path, payload);
      replace(note, h('div', { class: 'notice' }, `${what}: done.`));
    } catch (e) {
      replace(note, errorBox(e, `${what} failed`));
    }
  };

  let headKey = null;
  let sections = null;
  const drawHead = () => {
    const key = node ? `${node.Status}|${node.SchedulingEligibility}|${node.Drain}` : '';
    if (key === headKey) return;
    headKey = key;
    if (!node) return;
    const eligible = node.SchedulingEligibility === 'eligible';
    replace(head, h('h1', null, node.Name, pill(node.Status), pill(node.SchedulingEligibility), node.Drain ? pill('draining') : null),
      h('div', { class: 'actions' },
        h('button', {
          type: 'button', id: 'node-eligibility', disabled: node.Drain,
          onclick: () => act(eligible ? 'Mark ineligible' : 'Mark eligible', `/v1/node/${enc(id)}/eligibility`, { NodeID: id, Eligibility: eligible ? 'ineligible' : 'eligible' }),
        }, eligible ? 'Mark ineligible' : 'Mark eligible'),
        node.Drain
          ? h('button', { type: 'button', id: 'node-drain', onclick: () => act('Stop drain', `/v1/node/${enc(id)}/drain`, { NodeID: id, DrainSpec: null, MarkEligible: true }) }, 'Stop drain')
          : h('button', {
            type: 'button', id: 'node-drain', class: 'danger',
            onclick: () => act('Drain', `/v1/node/${enc(id)}/drain`, { NodeID: id, DrainSpec: { Deadline: 3600e9, IgnoreSystemJobs: false } }),
          }, 'Drain (1 h deadline)')));
  };

  const draw = () => {
    drawHead();
    if (!node) {
      sections = null;
      replace(body, errs.node ? errorBox(errs.node, 'Could not load the node') : loading());
      return;
    }
    const cap = nodeCapacity(node);
    const u = usageByNode((allocs || []).map((a) => ({ ...a, NodeID: id }))).get(id) || { cpu: 0, mem: 0, gpus: [], gpuMilli: 0, allocs: [] };
    const nr = node.NodeResources || {};
    if (!sections) {
      // Built once, so the attribute filter keeps its focus across live updates.
      sections = { err: h('div'), top: h('div'), allocs: h('div'), devices: h('div'), drivers: h('div'), attrs: h('div', { id: 'node-attrs' }), events: h('div') };
      replace(body, sections.err, sections.top,
        h('h2', null, 'Allocations'), sections.allocs, h('h2', null, 'Devices'), sections.devices,
        h('h2', null, 'Drivers'), sections.drivers, h('h2', null, 'Attributes'), attrFilter, sections.attrs,
        h('h2', null, 'Events'), sections.events);
    }
    replace(sections.err, errs.node ? errorBox(errs.node, 'Lost track of the node') : null);
    replace(sections.top, h('div', { class: 'grid' },
      h('div', { class: 'panel' }, kv([
        ['ID', h('span', { class: 'mono' }, node.ID)], ['Datacenter', node.Datacenter], ['Node pool', node.NodePool],
        ['Class', node.NodeClass || '–'], ['Address', node.HTTPAddr], ['Version', node.Version || '–'],
        ['Status updated', when((node.StatusUpdatedAt || 0) * (node.StatusUpdatedAt > 1e12 ? 1 : 1000))],
        node.StatusDescription ? ['Status', node.StatusDescription] : null,
      ])),
      h('div', { class: 'panel', id: 'node-resources' }, h('h3', null, 'Allocated / available'), kv([
        ['CPU', bar(u.cpu, cap.cpu, 'cpu', `${mhz(u.cpu)} / ${mhz(cap.cpu)}`)],
        ['Memory', bar(u.mem, cap.mem, 'mem', `${mb(u.mem)} / ${mb(cap.mem)}`)],
        ['GPUs', cap.gpus.length ? bar(u.gpuMilli / 1000, cap.gpus.length, 'gpu', `${fmtGPUs(u.gpuMilli)} / ${cap.gpus.length}`) : 'none'],
        ['Cores', nr.Cpu?.TotalCpuCores || '–'], ['Disk', mb(nr.Disk?.DiskMB)],
        ['Reserved', `${mhz(node.ReservedResources?.Cpu?.CpuShares || 0)}, ${mb(node.ReservedResources?.Memory?.MemoryMB || 0)}`],
      ]))));
    replace(sections.allocs, errs.allocs ? errorBox(errs.allocs, 'Could not list allocations') : null, allocsView());
    replace(sections.devices, devicesView(nr.Devices || [], holders(u.allocs)));
    replace(sections.drivers, driversView());
    replace(sections.attrs, attrsView());
    replace(sections.events, eventsView());
  };

  const allocsView = () => {
    if (!allocs) return loading();
    const rows = [...allocs].sort((a, b) => b.CreateIndex - a.CreateIndex).map((a) => [
      link(`/ui/allocations/${a.ID}`, shortId(a.ID), { class: 'mono' }), link(`/ui/jobs/${enc(a.JobID)}`, a.JobID), td('opt', a.Name),
      pill(a.ClientStatus), td('opt', a.DesiredStatus), when(a.CreateTime), td('num', restarts(a)),
    ]);
    return table(['ID', 'Job', { label: 'Name', class: 'opt' }, 'Status', { label: 'Desired', class: 'opt' }, 'Age', { label: 'Restarts', class: 'num' }], rows, { empty: 'No allocations on this node.' });
  };

  const driversView = () => {
    const rows = Object.entries(node.Drivers || {}).sort(([a], [b]) => a.localeCompare(b)).map(([name, d]) => [
      h('b', null, name), d.Detected ? 'yes' : 'no', pill(!d.Detected ? 'undetected' : d.Healthy ? 'healthy' : 'unhealthy', !d.Detected ? 'idle' : undefined),
      td('wrap', d.HealthDescription || ''), when(d.UpdateTime),
    ]);
    return table(['Driver', 'Detected', 'Health', 'Description', 'Updated'], rows, { id: 'drivers-table', empty: 'No drivers reported.' });
  };

  const attrsView = () => {
    const f = attrFilter.value.trim().toLowerCase();
    const rows = Object.entries({ ...(node.Attributes || {}), ...Object.fromEntries(Object.entries(node.Meta || {}).map(([k, v]) => [`meta.${k}`, v])) })
      .filter(([k, v]) => !f || k.toLowerCase().includes(f) || String(v).toLowerCase().includes(f))
      .sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [h('span', { class: 'mono' }, k), td('wrap mono', v)]);
    return table(['Attribute', 'Value'], rows, { empty: 'No attributes match.' });
  };
  attrFilter.addEventListener('input', () => {
    if (sections && node) replace(sections.attrs, attrsView());
  });

  const eventsView = () => {
    const evs = [...(node.Events || [])].sort((a, b) => (b.CreateIndex || 0) - (a.CreateIndex || 0)).slice(0, 30);
    if (!evs.length) return h('div', { class: 'muted' }, 'No node events.');
    return h('ol', { class: 'timeline' }, evs.map((e) => h('li', null, when(e.Timestamp), ' ', h('b', null, e.Subsystem || ''), ' ', e.Message)));
  };

  watch(`/v1/node/${enc(id)}`, (n) => { node = n; delete errs.node; draw(); }, (e) => { errs.node = e; draw(); }, signal, { topics: ['Node'], keys: [id] });
  watch(url(`/v1/node/${enc(id)}/allocations`), (a) => { allocs = a || []; delete errs.allocs; if (node) draw(); }, (e) => { errs.allocs = e; if (node) draw(); }, signal, { topics: ['Allocation'] });
}

/** attr formats a device Attribute ({FloatVal|IntVal|StringVal|BoolVal, Unit}). */
function attr(a) {
  if (!a) return '–';
  const v = a.StringVal ?? a.IntVal ?? a.FloatVal ?? a.BoolVal;
  return v === undefined ? '–' : `${v}${a.Unit ? ` ${a.Unit}` : ''}`;
}

const linkClass = { nvlink: 'nv', 'pcie-switch': 'sw', 'pcie-host': 'host', system: 'sys' };
const linkLabel = (l) => (l.Kind === 'nvlink' ? `NV${l.NVLinks || ''}` : { 'pcie-switch': 'PIX', 'pcie-host': 'PHB', system: 'SYS' }[l.Kind] || l.Kind);

// holders maps each device instance ID to the live allocs holding it:
// [{alloc, share}], share null for the whole instance.
function holders(allocs) {
  const m = new Map();
  for (const a of allocs) {
    for (const g of allocResources(a.AllocatedResources).grants) {
      if (!m.has(g.id)) m.set(g.id, []);
      m.get(g.id).push({ alloc: a, share: g.share });
    }
  }
  return m;
}

// heldBy is an instance's holders: a link to each alloc, with the share
// it holds when the instance is shared ("0.25, limit 0.5, 20 GiB").
function heldBy(hs) {
  if (!hs.length) return pill('free', 'idle');
  return hs.map(({ alloc, share }) => h('div', { class: share ? 'share' : 'whole', dataset: { allocId: alloc.ID, milli: share ? share.Milli : 1000 } },
    link(`/ui/allocations/${alloc.ID}`, alloc.Name, { class: 'alloc-link', title: alloc.ID }),
    share ? ` ${shareGrant(share, false)}` : null));
}

function devicesView(devices, used) {
  if (!devices.length) return h('div', { class: 'muted', id: 'devices' }, 'No devices fingerprinted on this node.');
  return h('div', { id: 'devices' }, devices.map((d) => {
    const inst = d.Instances || [];
    const attrs = Object.entries(d.Attributes || {}).sort(([a], [b]) => a.localeCompare(b));
    const mem = d.Attributes?.memory;
    const rows = inst.map((i, n) => {
      const hs = used.get(i.ID) || [];
      // A shared GPU runs one mode; what its holders do not hold is free.
      const shared = hs.length > 0 && hs.every((x) => x.share);
      const milli = hs.reduce((sum, x) => sum + (x.share ? x.share.Milli : 1000), 0);
      const modes = [...new Set(hs.filter((x) => x.share).map((x) => x.share.Mode))];
      return h('tr', { dataset: { gpu: i.ID, free: Math.max(0, 1000 - milli), mode: shared ? modes.join(',') : '' } },
        td('num', n), td('', h('span', { class: 'mono' }, i.ID)), td('held-by', heldBy(hs)),
        td('mode', shared ? modes.join(', ') : '–'), td('num free', fmtGPUs(Math.max(0, 1000 - milli))),
        td('', pill(i.Healthy ? 'healthy' : 'unhealthy')), td('wrap', i.HealthDescription || ''),
        td('', h('span', { class: 'mono' }, i.Locality?.PciBusID || '–')), td('num', i.Locality?.NUMANode ?? '–'));
    });
    return h('div', { class: 'panel device' },
      h('h3', null, `${d.Vendor}/${d.Type}/${d.Name}`, ` · ${inst.length} instance${inst.length === 1 ? '' : 's'}`, mem ? ` · ${attr(mem)} each` : ''),
      table([{ label: '#', class: 'num' }, 'ID', 'Held by', 'Share mode', { label: 'Free', class: 'num' }, 'Health', 'Detail', 'PCI bus', { label: 'NUMA', class: 'num' }], rows),
      attrs.length ? h('div', { class: 'sub' }, attrs.map(([k, v]) => `${k}=${attr(v)}`).join(' · ')) : null,
      matrix(inst));
  }));
}

// matrix draws the instance-to-instance link table from NodeDevice.Links.
function matrix(inst) {
  if (inst.length < 2 || !inst.some((i) => Object.keys(i.Links || {}).length)) return null;
  const head = h('tr', null, h('th'), inst.map((_, n) => h('th', null, `GPU${n}`)));
  const rows = inst.map((a, r) => h('tr', null, h('th', null, `GPU${r}`), inst.map((b) => {
    if (a.ID === b.ID) return h('td', { class: 'self' }, 'X');
    const l = a.Links?.[b.ID];
    if (!l) return h('td', null, '?');
    return h('td', { class: linkClass[l.Kind] || '', title: `${l.Kind}, level ${l.Level}${l.NVLinks ? `, ${l.NVLinks} NVLinks` : ''}` }, linkLabel(l));
  })));
  return h('div', null, h('h3', null, 'Topology'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'matrix', id: 'gpu-matrix' }, h('thead', null, head), h('tbody', null, rows))),
    h('div', { class: 'legend' }, ['NV# = NVLink (count)', 'PIX = same PCIe switch', 'PHB = same host bridge', 'SYS = across NUMA nodes'].map((x) => h('span', null, x))));
}
