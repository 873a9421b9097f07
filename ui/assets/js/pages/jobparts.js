// pages/jobparts.js: views the job page and the task-group page share: the
// allocations table, a group's resources, and the gangs section (each
// gang's size and min, its members by rank with node, rack and state, the
// leader address, the reservation a pending gang holds, and its earlier
// attempts).
import { get } from '../api.js';
import {
  h, table, td, pill, link, when, shortId, kv, mhz, mb, restarts, allocResources, shareGrant, gpuIdleBadge, liveAlloc,
} from '../dom.js';

// gpuCell is what GPUs an alloc was given: "2 GPUs" whole, or each
// share with the GPU it is of ("0.25 mps, limit 0.5, 20 GiB of GPU-…").
const gpuCell = (a) => {
  const { grants } = allocResources(a.AllocatedResources);
  const whole = grants.filter((g) => !g.share);
  return td('wrap gpu-grant',
    whole.length ? h('div', { title: whole.map((g) => g.id).join(', ') }, `${whole.length} GPU${whole.length === 1 ? '' : 's'}`) : null,
    grants.filter((g) => g.share).map((g) => h('div', { class: 'share-grant', dataset: { gpu: g.id, milli: g.share.Milli, mode: g.share.Mode } },
      `${shareGrant(g.share)} of `, h('span', { class: 'mono', title: g.id }, g.id.slice(0, 12)))),
    grants.length ? null : '–');
};

/** allocsTable lists allocations newest first (with their GPUs when any has some). */
export function allocsTable(allocs, { id = 'allocs-table', empty = 'No allocations.' } = {}) {
  const withGPUs = allocs.some((a) => allocResources(a.AllocatedResources).grants.length);
  const rows = [...allocs].sort((a, b) => b.CreateIndex - a.CreateIndex).map((a) => h('tr', { dataset: { allocId: a.ID, status: a.ClientStatus, desired: a.DesiredStatus, group: a.TaskGroup } },
    td('', link(`/ui/allocations/${a.ID}`, shortId(a.ID), { class: 'mono alloc-link' })),
    td('opt', a.Name),
    td('', pill(a.ClientStatus), a.DesiredStatus === 'run' ? gpuIdleBadge(a.GPUUsage) : null),
    td('opt', a.DesiredStatus),
    td('', a.NodeID ? link(`/ui/nodes/${a.NodeID}`, a.NodeName || shortId(a.NodeID)) : '–'),
    td('', when(a.CreateTime)),
    td('num', restarts(a)),
    withGPUs ? gpuCell(a) : null,
    td('num opt', a.JobVersion)));
  return table(['ID', { label: 'Name', class: 'opt' }, 'Status', { label: 'Desired', class: 'opt' }, 'Node', 'Age', { label: 'Restarts', class: 'num' },
    withGPUs ? 'GPUs' : null, { label: 'Version', class: 'num opt' }].filter(Boolean), rows, { id, empty });
}

/** groupResources sums what one alloc of the group asks: cpu MHz, memory MB, disk MB and devices by name. */
export function groupResources(tg) {
  const r = { cpu: 0, mem: 0, disk: tg.EphemeralDisk?.SizeMB || 0, devices: {} };
  for (const t of tg.Tasks || []) {
    r.cpu += t.Resources?.CPU || 0;
    r.mem += t.Resources?.MemoryMB || 0;
    for (const d of t.Resources?.Devices || []) r.devices[d.Name] = (r.devices[d.Name] || 0) + (d.Count ?? 1);
  }
  return r;
}

/** resourcesText formats groupResources: "1.5 GHz · 512 MiB · 300 MiB disk · 2× nvidia/gpu". */
export function resourcesText(r) {
  return [mhz(r.cpu), mb(r.mem), r.disk ? `${mb(r.disk)} disk` : null,
    ...Object.entries(r.devices).map(([n, c]) => `${c}× ${n}`)].filter(Boolean).join(' · ');
}

/**
 * jobGangs lists a job's gangs in group order: the job-wide gang ("job",
 * over every group) or one per group with a gang block; members is the
 * groups' counts together, min the fewest it runs with.
 */
export function jobGangs(job) {
  const out = [];
  for (const tg of job.TaskGroups || []) {
    const g = job.Gang || tg.Gang;
    if (!g) continue;
    const id = job.Gang ? 'job' : tg.Name;
    const last = out[out.length - 1];
    if (last && last.id === id) {
      last.groups.push(tg.Name);
      last.members += tg.Count ?? 1;
      continue;
    }
    out.push({ id, gang: g, groups: [tg.Name], members: tg.Count ?? 1 });
  }
  for (const g of out) g.min = g.gang.Min > 0 && g.gang.Min < g.members ? g.gang.Min : g.members;
  return out;
}

/**
 * gangAttempts splits a gang's allocs into the current members and the
 * earlier attempts. An attempt is one placement: the members one plan
 * placed together (one evaluation). The current members are the live ones
 * (a running gang may have had members replaced by later plans); without
 * any, the newest attempt is current. Attempts are newest first.
 */
export function gangAttempts(gangID, allocs) {
  const mine = (allocs || []).filter((a) => a.Gang?.ID === gangID);
  const byEval = new Map();
  for (const a of mine) {
    if (!byEval.has(a.EvalID)) byEval.set(a.EvalID, []);
    byEval.get(a.EvalID).push(a);
  }
  const attempts = [...byEval.values()].map((as) => ({
    allocs: as.sort((x, y) => x.Gang.Rank - y.Gang.Rank),
    created: Math.min(...as.map((a) => a.CreateIndex)),
    live: as.some(liveAlloc),
  })).sort((x, y) => y.created - x.created);
  let current = mine.filter(liveAlloc);
  let earlier = attempts.filter((t) => !t.live);
  if (!current.length && attempts.length) {
    current = attempts[0].allocs;
    earlier = attempts.slice(1);
  }
  return { current: current.sort((x, y) => x.Gang.Rank - y.Gang.Rank), earlier };
}

/** rackOf is a node's topology.rack meta ('' when unknown). */
export const rackOf = (node) => node?.Meta?.['topology.rack'] || '';

/**
 * nodeCache fetches the nodes a gang's members run on (their rack is node
 * meta, not in the lists) once each, calling changed() when one arrives.
 */
export function nodeCache(signal, changed) {
  const nodes = new Map();
  return (id) => {
    if (!id) return null;
    if (!nodes.has(id)) {
      nodes.set(id, null);
      get(`/v1/node/${id}`, { signal }).then((n) => {
        nodes.set(id, n);
        if (!signal.aborted) changed();
      }).catch(() => {});
    }
    return nodes.get(id);
  };
}

/** outcome sums an attempt's allocs by client status: "1 failed, 1 complete". */
function outcome(as) {
  const c = {};
  for (const a of as) c[a.ClientStatus] = (c[a.ClientStatus] || 0) + 1;
  return Object.entries(c).map(([s, n]) => `${n} ${s}`).join(', ');
}

/**
 * gangsView is the Gangs section for a job (or only the gangs holding
 * group, on a group's page): null for a job without gangs. node(id)
 * returns a node once fetched; evals find the reservation of a pending gang.
 */
export function gangsView(job, allocs, evals, node, group) {
  const gangs = jobGangs(job).filter((g) => !group || g.groups.includes(group));
  if (!gangs.length) return null;
  const blocked = (evals || []).filter((e) => e.Status === 'blocked' && e.Reservation);
  return h('div', { id: 'gangs' }, gangs.map((g) => {
    const { current, earlier } = gangAttempts(g.id, allocs);
    const placed = current.find((a) => a.Gang?.LeaderAddr) || current[0];
    const leader = placed?.Gang?.LeaderAddr || '';
    const res = blocked.find((e) => (e.Reservation.Groups || []).some((n) => g.groups.includes(n)))?.Reservation;
    let state = 'finished';
    if (current.some((a) => liveAlloc(a) && a.ClientStatus === 'running')) state = 'running';
    else if (current.some(liveAlloc)) state = 'starting';
    else if (res || !current.length) state = 'pending';
    const t = g.gang.Topology;
    const members = current.map((a) => {
      const n = node(a.NodeID);
      return h('tr', { dataset: { rank: a.Gang.Rank, allocId: a.ID, status: a.ClientStatus } },
        td('num rank', a.Gang.Rank, a.Gang.Rank === 0 ? h('span', { class: 'sub' }, ' leader') : null),
        td('', link(`/ui/allocations/${a.ID}`, shortId(a.ID), { class: 'mono alloc-link' })),
        td('opt', a.Name),
        td('', a.NodeID ? link(`/ui/nodes/${a.NodeID}`, a.NodeName || shortId(a.NodeID)) : '–'),
        td('rack', rackOf(n) || (n ? '–' : '…')),
        td('', pill(a.ClientStatus), a.DesiredStatus !== 'run' ? h('span', { class: 'sub' }, ` ${a.DesiredStatus}`) : null));
    });
    return h('section', { class: 'panel gang', dataset: { gang: g.id, state } },
      h('h3', null, `Gang ${g.id}`, ' ', pill(state)),
      kv([
        ['Groups', g.groups.map((n, i) => [i ? ', ' : '', link(groupPath(job, n), n)])],
        ['Size', h('span', { class: 'gang-size' }, placed ? `${placed.Gang.Size} placed of ${g.members}` : `${g.members}`, `, min ${g.min}`)],
        ['Leader', h('span', { class: 'mono gang-leader' }, leader || '–')],
        t ? ['Topology', `${t.Level} (${t.Mode || 'preferred'})`] : null,
        g.gang.Timeout ? ['Placement timeout', `${g.gang.Timeout / 1e9}s`] : null,
        res ? ['Reservation', reservationView(res, node)] : null,
      ]),
      current.length
        ? table([{ label: 'Rank', class: 'num' }, 'Alloc', { label: 'Name', class: 'opt' }, 'Node', 'Rack', 'State'], members, { id: `gang-${g.id}-members` })
        : h('div', { class: 'muted' }, 'No members placed: the gang is placed whole or not at all.'),
      earlier.length ? [h('h3', null, `Earlier attempts (${earlier.length})`), attemptsTable(g.id, earlier)] : null);
  }));
}

/** groupPath is a task group's page. */
export const groupPath = (job, group) => `/ui/jobs/${encodeURIComponent(job.ID)}/groups/${encodeURIComponent(group)}${job.Namespace && job.Namespace !== 'default' ? `?namespace=${encodeURIComponent(job.Namespace)}` : ''}`;

function reservationView(r, node) {
  return h('span', { class: 'gang-reservation' },
    `${(r.Nodes || []).length} node${(r.Nodes || []).length === 1 ? '' : 's'} held for ${(r.Groups || []).join(', ')} (priority ${r.Priority}): `,
    (r.Nodes || []).map((n, i) => [i ? ', ' : '', link(`/ui/nodes/${n.NodeID}`, node(n.NodeID)?.Name || shortId(n.NodeID)),
      ` (${n.Members} member${n.Members === 1 ? '' : 's'})`]),
    r.CreateTime ? [' since ', when(r.CreateTime)] : null);
}

function attemptsTable(id, earlier) {
  const rows = earlier.map((t, i) => h('tr', { dataset: { attempt: earlier.length - i } },
    td('num', earlier.length - i),
    td('', when(Math.min(...t.allocs.map((a) => a.CreateTime)))),
    td('num', t.allocs.length),
    td('wrap', t.allocs.map((a, j) => [j ? ', ' : '', link(`/ui/allocations/${a.ID}`, `${a.Gang.Rank}:${shortId(a.ID)}`, { class: 'mono' })])),
    td('', outcome(t.allocs)),
    td('wrap', [...new Set(t.allocs.map((a) => a.DesiredDescription || a.ClientDescription).filter(Boolean))].join('; ') || '–')));
  return table([{ label: '#', class: 'num' }, 'Placed', { label: 'Members', class: 'num' }, 'Allocs (rank:id)', 'Outcome', 'Why it ended'],
    rows, { id: `gang-${id}-attempts` });
}
