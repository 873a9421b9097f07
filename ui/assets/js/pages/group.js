// pages/group.js: one task group of a job, as Nomad's UI has it: its count,
// what each alloc asks (resources), the summary of its allocations by
// state, its tasks, its gang when it is in one, and its allocations.
import { watch, url, onEvents, loader } from '../api.js';
import {
  h, replace, table, td, link, errorBox, loading, countsView, enc, kv, mhz, mb, debounce, shareAsk,
} from '../dom.js';
import { allocsTable, gangsView, nodeCache, groupResources, resourcesText } from './jobparts.js';

export function render(root, { id, group }, { signal, query }) {
  const ns = query.get('namespace') || 'default';
  const q = { namespace: ns };
  const base = `/v1/job/${enc(id)}`;
  const jobPath = `/ui/jobs/${enc(id)}${ns !== 'default' ? `?namespace=${enc(ns)}` : ''}`;
  let job = null;
  let allocs = null;
  let summary = null;
  let evals = null;
  const errs = {};

  const body = h('div', { id: 'group' }, loading());
  root.append(h('div', { class: 'sub' }, link('/ui/jobs', 'Jobs'), ' / ', link(jobPath, id, { id: 'group-job-link' }), ' / ', group),
    h('div', { class: 'page-head' }, h('h1', null, group, h('span', { class: 'sub' }, `task group of ${id}`))), body);
  const node = nodeCache(signal, () => draw());

  const draw = () => {
    if (!job) {
      replace(body, errs.job ? errorBox(errs.job, 'Could not load the job') : loading());
      return;
    }
    const tg = (job.TaskGroups || []).find((g) => g.Name === group);
    if (!tg) {
      replace(body, h('div', { class: 'error', role: 'alert' }, `Job ${id} has no task group ${group}. `, link(jobPath, 'Back to the job.')));
      return;
    }
    const mine = (allocs || []).filter((a) => a.TaskGroup === group);
    const s = summary?.Summary?.[group] || {};
    const counts = { queued: s.Queued || 0, starting: s.Starting || 0, running: s.Running || 0, complete: s.Complete || 0,
      failed: s.Failed || 0, lost: s.Lost || 0, unknown: s.Unknown || 0 };
    const r = groupResources(tg);
    const count = tg.Count ?? 1;
    const gang = allocs ? gangsView(job, allocs, evals, node, group) : null;
    replace(body,
      h('div', { class: 'grid' },
        h('div', { class: 'panel', id: 'group-info' }, kv([
          ['Count', h('span', { id: 'group-count' }, String(count))],
          ['Each allocation', h('span', { id: 'group-resources' }, resourcesText(r))],
          ['Whole group', h('span', { id: 'group-total' }, `${mhz(r.cpu * count)} · ${mb(r.mem * count)}`)],
          ['Job', link(jobPath, id)], ['Namespace', job.Namespace], ['Type', job.Type],
          tg.Constraints?.length ? ['Constraints', tg.Constraints.map((c) => `${c.LTarget} ${c.Operand} ${c.RTarget}`).join('; ')] : null,
        ])),
        h('div', { class: 'panel', id: 'group-summary' }, h('h3', null, 'Allocations'), countsView(counts),
          h('div', { class: 'sub' }, `${mine.filter((a) => a.DesiredStatus === 'run').length} desired running of ${count}`))),
      h('h2', null, 'Tasks'),
      table(['Task', 'Driver', { label: 'CPU', class: 'num' }, { label: 'Memory', class: 'num' }, 'Devices', { label: 'Command', class: 'opt' }],
        (tg.Tasks || []).map((t) => h('tr', { dataset: { task: t.Name } },
          td('', h('b', null, t.Name)), td('', t.Driver), td('num', mhz(t.Resources?.CPU)), td('num', mb(t.Resources?.MemoryMB)),
          td('wrap', (t.Resources?.Devices || []).map((d, i) => [i ? ', ' : '', `${d.Count ?? 1}× ${d.Name}`, d.Share ? ` (share ${shareAsk(d.Share)} of each)` : ''])),
          td('opt mono', t.Config?.command ? `${t.Config.command} ${(t.Config.args || []).join(' ')}`.slice(0, 140) : ''))),
        { id: 'group-tasks' }),
      gang ? [h('h2', null, 'Gang'), gang] : null,
      h('h2', null, 'Allocations'), errs.allocs ? errorBox(errs.allocs, 'Could not list allocations') : null,
      allocs ? allocsTable(mine, { id: 'group-allocs', empty: 'No allocations of this group.' }) : loading());
  };

  const load = loader(errs, signal, () => draw());
  const refreshSide = debounce(() => {
    load('summary', url(`${base}/summary`, q), (v) => { summary = v; });
    load('evals', url(`${base}/evaluations`, q), (v) => { evals = v || []; });
  }, 150);
  watch(url(base, q), (j) => { job = j; delete errs.job; draw(); refreshSide(); },
    (e) => { errs.job = e; if (e.status === 404) job = null; draw(); }, signal, { topics: ['Job'], keys: [id] });
  watch(url(`${base}/allocations`, q), (a) => { allocs = a || []; delete errs.allocs; draw(); refreshSide(); },
    (e) => { errs.allocs = e; draw(); }, signal, { topics: ['Allocation'], keys: [id] });
  const off = onEvents(['Evaluation'], (evs) => {
    if (evs.some((e) => e.Topic === 'Reconnect' || (e.Payload?.Evaluation?.JobID ?? id) === id)) refreshSide();
  });
  signal.addEventListener('abort', off);
}
