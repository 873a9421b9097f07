// pages/job.js: one job: groups and tasks (with the GPU shares asked, each
// group linking to its page), gangs (members, leader, reservation, earlier
// attempts), allocations (with the GPUs or shares given), evaluations,
// versions (with revert), placement failures, the job's definition as
// the API holds it, and stop/start/re-evaluate.
import { watch, get, put, post, del, url, onEvents, loader } from '../api.js';
import {
  h, replace, table, td, pill, link, when, errorBox, loading, countsView, summaryCounts, enc, shortId, kv, mhz, mb, confirmButton, debounce,
  shareAsk,
} from '../dom.js';
import { failuresView } from './failures.js';
import { allocsTable, gangsView, nodeCache, groupPath, groupResources, resourcesText } from './jobparts.js';

export function render(root, { id }, { signal, query }) {
  const ns = query.get('namespace') || 'default';
  const q = { namespace: ns };
  const base = `/v1/job/${enc(id)}`;
  let job = null;
  let allocs = null;
  let evals = null;
  let versions = null;
  let summary = null;
  const errs = {};

  const head = h('div', { class: 'page-head' }, h('h1', null, id));
  const note = h('div', { id: 'job-note' });
  const body = h('div', { id: 'job' }, loading());
  root.append(h('div', { class: 'sub' }, link('/ui/jobs', 'Jobs'), ' / ', id), head, note, body);

  const act = async (what, fn) => {
    replace(note);
    try {
      const r = await fn();
      const ev = r?.EvalID ? [' evaluation ', h('span', { class: 'mono' }, shortId(r.EvalID)), ' created.'] : '';
      replace(note, h('div', { class: 'notice', id: 'job-action-result' }, `${what}: done.`, ev));
      refreshSide();
    } catch (e) {
      replace(note, errorBox(e, `${what} failed`));
    }
  };
  const stop = () => act('Stop', () => del(url(base, q)));
  const start = () => act('Start', async () => {
    const j = await get(url(base, q));
    j.Stop = false;
    return put(url('/v1/jobs', q), { Job: j });
  });
  const reeval = () => act('Re-evaluate', () => post(url(`${base}/evaluate`, q), { JobID: id }));
  // Revert only while the job is still at the version shown, so a click on
  // a stale page does not undo someone else's update.
  const revert = (v) => act(`Revert to version ${v}`, () => post(url(`${base}/revert`, q),
    { JobID: id, JobVersion: v, EnforcePriorVersion: job?.Version }));

  // The definition (GET /v1/job/{id}) is one element kept across redraws,
  // so an open <details> stays open while the page updates live.
  const defText = h('pre', { class: 'log', id: 'job-definition-json', tabindex: '0' });
  const definition = h('details', { id: 'job-definition', class: 'panel' }, h('summary', null, 'Definition (JSON)'), defText);
  const drawDefinition = () => {
    const text = JSON.stringify(job, null, 2);
    if (defText.textContent !== text) defText.textContent = text;
  };

  let headKey = null;
  const drawHead = () => {
    // Re-render only on a change, so a half-confirmed Stop stays armed.
    const key = job ? `${job.Status}|${job.Stop}` : 'none';
    if (key === headKey) return;
    headKey = key;
    const items = [h('h1', null, id, job ? pill(job.Stop && job.Status !== 'dead' ? 'stopping' : job.Status) : null,
      job?.Stop ? h('span', { class: 'pill idle', id: 'job-stopped' }, 'stopped') : null)];
    if (job) {
      items.push(h('div', { class: 'actions' },
        job.Stop
          ? h('button', { class: 'primary', id: 'job-start', type: 'button', onclick: start }, 'Start')
          : confirmButton('Stop', 'Confirm stop', stop),
        h('button', { type: 'button', id: 'job-eval', onclick: reeval }, 'Re-evaluate')));
    }
    replace(head, items);
    const sb = head.querySelector('button.danger');
    if (sb) sb.id = 'job-stop';
  };

  const draw = () => {
    drawHead();
    if (!job) {
      replace(body, errs.job ? errorBox(errs.job, 'Could not load the job') : loading());
      return;
    }
    const live = (allocs || []).filter((a) => a.DesiredStatus === 'run');
    let counts = { pending: 0, running: 0, complete: 0, failed: 0, lost: 0 };
    for (const a of allocs || []) counts[a.ClientStatus] = (counts[a.ClientStatus] || 0) + 1;
    // The summary also counts what is queued (not placed yet).
    if (summary) counts = summaryCounts(summary);
    replace(body,
      spill(),
      multiregion(),
      h('div', { class: 'grid' },
        h('div', { class: 'panel' }, kv([
          ['Type', job.Type], ['Namespace', job.Namespace], ['Priority', job.Priority],
          ['Version', job.Version], ['Datacenters', (job.Datacenters || []).join(', ')],
          ['Node pool', job.NodePool], ['Queue', link(`/ui/queues`, job.Queue || 'default', { id: 'job-queue' })],
          ['Submitted', when(job.SubmitTime)],
          job.StatusDescription ? ['Status', job.StatusDescription] : null,
        ])),
        h('div', { class: 'panel' }, h('h3', null, 'Allocations'), countsView(counts),
          h('div', { class: 'sub' }, `${live.length} desired running`))),
      failures(),
      h('h2', null, 'Task groups'), groupsView(),
      gangs(),
      h('h2', null, 'Allocations'), errs.allocs ? errorBox(errs.allocs, 'Could not list allocations') : null, allocsView(),
      h('h2', null, 'Evaluations'), errs.evals ? errorBox(errs.evals, 'Could not list evaluations') : null, evalsView(),
      h('h2', null, 'Versions'), errs.versions ? errorBox(errs.versions, 'Could not list versions') : null, versionsView(),
      h('h2', null, 'Definition'), definition);
    drawDefinition();
  };

  // Spill-over (placement mode spill): where the job went and why, at
  // home; where it came from, in the region it went to.
  const spill = () => {
    const m = job.Meta || {};
    if (m['drover.spilled_to']) {
      return h('div', { class: 'notice', id: 'job-spill' }, `Spilled to ${m['drover.spilled_to']}: ${m['drover.spill_reason'] || ''}`);
    }
    if (m['drover.spilled_from']) return h('div', { class: 'notice', id: 'job-spill' }, `Spilled from ${m['drover.spilled_from']}.`);
    return null;
  };

  // Multiregion jobs: each region's deployment of this version (Nomad's
  // "Multiregion Deployment" table), read once per version, forwarded by
  // region.
  let mr = null;
  const multiregion = () => {
    const regions = (job.Multiregion?.Regions || []).map((r) => r.Name);
    if (!regions.length) return null;
    const key = `${job.Version}`;
    if (mr?.key !== key) {
      mr = { key, rows: {} };
      const mine = mr;
      for (const r of regions) {
        get(url(`${base}/deployments`, { ...q, region: r }), { signal }).then((ds) => {
          const d = (ds || []).find((x) => x.JobVersion === job.Version);
          mine.rows[r] = d ? [td('mono', shortId(d.ID)), pill(d.Status)] : ['-', 'none'];
        }, (e) => { mine.rows[r] = ['-', `unknown (${e.message || e})`]; }).then(() => { if (mr === mine) draw(); });
      }
    }
    const rows = regions.map((r) => [r, ...(mr.rows[r] || ['…', '…'])]);
    return h('div', null, h('h2', null, 'Multiregion deployment'), table(['Region', 'ID', 'Status'], rows, { id: 'job-multiregion' }));
  };

  const failures = () => {
    if (!evals) return null;
    const sorted = [...evals].sort((a, b) => b.CreateIndex - a.CreateIndex);
    const failed = {};
    // The newest finished eval says whether placements still fail; blocked
    // evals waiting for capacity carry no metrics of their own.
    for (const e of sorted) {
      for (const [g, m] of Object.entries(e.FailedTGAllocs || {})) if (!failed[g]) failed[g] = m;
      if (e.Status !== 'blocked' && e.Status !== 'pending') break;
    }
    return failuresView(failed, 'Placement failures (why allocations are pending)');
  };

  const node = nodeCache(signal, () => { if (job) draw(); });
  const gangs = () => {
    const v = allocs ? gangsView(job, allocs, evals, node) : null;
    return v ? [h('h2', null, 'Gangs'), v] : null;
  };

  const groupsView = () => table(['Group', { label: 'Count', class: 'num' }, { label: 'Resources (each)', class: 'opt' }, 'Tasks'], (job.TaskGroups || []).map((g) => [
    link(groupPath(job, g.Name), g.Name, { class: 'group-link', dataset: { group: g.Name } }), td('num', g.Count ?? 1),
    td('opt', resourcesText(groupResources(g))),
    td('wrap', (g.Tasks || []).map((t) => h('div', null,
      h('b', null, t.Name), ` · ${t.Driver} · ${mhz(t.Resources?.CPU)} · ${mb(t.Resources?.MemoryMB)}`,
      t.Config?.command ? h('span', { class: 'mono muted' }, ` · ${t.Config.command} ${(t.Config.args || []).join(' ')}`.slice(0, 140)) : null,
      (t.Resources?.Devices || []).length ? [' · devices: ', t.Resources.Devices.map((d, i) => [i ? ', ' : '', `${d.Count ?? 1}× ${d.Name}`,
        d.Share ? h('span', { class: 'share-ask', dataset: { device: d.Name } }, ` (share ${shareAsk(d.Share)} of each)`) : null])] : null))),
  ]));

  const allocsView = () => (allocs ? allocsTable(allocs) : loading());

  const evalsView = () => {
    if (!evals) return loading();
    const rows = [...evals].sort((a, b) => b.CreateIndex - a.CreateIndex).slice(0, 25).map((e) => [
      h('span', { class: 'mono' }, shortId(e.ID)), pill(e.Status), e.TriggeredBy,
      td('wrap', e.StatusDescription || (Object.keys(e.FailedTGAllocs || {}).length ? `failed to place: ${Object.keys(e.FailedTGAllocs).join(', ')}` : '')),
      when(e.CreateTime),
    ]);
    return table(['ID', 'Status', 'Triggered by', 'Description', 'Created'], rows, { id: 'evals-table', empty: 'No evaluations.' });
  };

  const versionsView = () => {
    if (!versions) return loading();
    const rows = (versions.Versions || []).map((v) => [
      td('num', v.Version), v.Stable ? pill('stable', 'ok') : '', v.Stop ? 'stopped' : '', when(v.SubmitTime),
      td('wrap', (v.TaskGroups || []).map((g) => `${g.Name}×${g.Count ?? 1}`).join(', ')),
      v.Version === job.Version ? h('span', { class: 'muted' }, 'current')
        : h('button', { type: 'button', class: 'revert', dataset: { version: v.Version }, onclick: () => revert(v.Version) }, `Revert to v${v.Version}`),
    ]);
    return table([{ label: 'Version', class: 'num' }, 'Stable', 'Stop', 'Submitted', 'Groups', ''], rows, { id: 'versions-table' });
  };

  const load = loader(errs, signal, () => draw());
  const refreshSide = debounce(() => {
    load('evals', url(`${base}/evaluations`, q), (v) => { evals = v || []; });
    load('versions', url(`${base}/versions`, q), (v) => { versions = v; });
    load('summary', url(`${base}/summary`, q), (v) => { summary = v; });
  }, 150);

  watch(url(base, q), (j) => {
    job = j;
    delete errs.job;
    draw();
    refreshSide();
  }, (e) => {
    errs.job = e;
    if (e.status === 404) job = null;
    draw();
  }, signal, { topics: ['Job'], keys: [id] });
  watch(url(`${base}/allocations`, q), (a) => {
    allocs = a || [];
    delete errs.allocs;
    if (job) draw();
    refreshSide();
  }, (e) => {
    errs.allocs = e;
    if (job) draw();
  }, signal, { topics: ['Allocation'], keys: [id] });
  const off = onEvents(['Evaluation'], (evs) => {
    if (evs.some((e) => e.Topic === 'Reconnect' || (e.Payload?.Evaluation?.JobID ?? id) === id)) refreshSide();
  });
  signal.addEventListener('abort', off);
  // Ages tick without new data.
  const tick = setInterval(() => { if (job && !document.hidden) draw(); }, 10000);
  signal.addEventListener('abort', () => clearInterval(tick));
}
