// pages/deployments.js: the deployments list (GET /v1/deployments) and one
// deployment (GET /v1/deployment/{id}) with its groups' progress and the
// promote (canaries) and fail buttons.
import { watch, post, url } from '../api.js';
import { h, replace, table, td, pill, link, errorBox, loading, enc, shortId, confirmButton, kv } from '../dom.js';
import { listNamespace } from '../ns.js';

const jobLink = (d) => link(`/ui/jobs/${enc(d.JobID)}${d.Namespace && d.Namespace !== 'default' ? `?namespace=${enc(d.Namespace)}` : ''}`, d.JobID);

// progress sums a deployment's groups: "healthy / desired".
function progress(d) {
  let want = 0;
  let healthy = 0;
  for (const g of Object.values(d.TaskGroups || {})) {
    want += g.DesiredTotal || 0;
    healthy += g.HealthyAllocs || 0;
  }
  return `${healthy} / ${want} healthy`;
}

/** render shows the list, or one deployment when the route names an id. */
export function render(root, params, ctx) {
  if (params.id) return one(root, params.id, ctx);
  let list = null;
  let err = null;
  const out = h('div', { id: 'deployments' }, loading());
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Deployments')), out);
  const draw = () => {
    if (!list) {
      replace(out, err ? errorBox(err, 'Could not list deployments') : loading());
      return;
    }
    const rows = [...list].sort((a, b) => b.CreateIndex - a.CreateIndex).map((d) => h('tr', { dataset: { deploymentId: d.ID, status: d.Status } },
      td('', link(`/ui/deployments/${d.ID}`, shortId(d.ID), { class: 'mono deployment-link' })), td('', jobLink(d)),
      td('num', d.JobVersion), td('', pill(d.Status)), td('', progress(d)), td('wrap opt', d.StatusDescription || '')));
    replace(out, err ? errorBox(err, 'Lost the deployment list') : null,
      table(['ID', 'Job', { label: 'Version', class: 'num' }, 'Status', 'Progress', { label: 'Description', class: 'opt' }], rows,
        { id: 'deployments-table', empty: 'No deployments yet: a service job with an update block makes one.' }));
  };
  watch(url('/v1/deployments', { namespace: listNamespace(ctx.query) }), (l) => { list = l || []; err = null; draw(); }, (e) => { err = e; draw(); },
    ctx.signal, { topics: ['Deployment'] });
}

function one(root, id, { signal }) {
  let d = null;
  let err = null;
  const note = h('div', { id: 'deployment-note' });
  const head = h('div', { class: 'page-head' }, h('h1', null, `Deployment ${shortId(id)}`));
  const out = h('div', { id: 'deployment' }, loading());
  root.append(h('div', { class: 'sub' }, link('/ui/deployments', 'Deployments'), ' / ', shortId(id)), head, note, out);
  const act = async (what, path, body) => {
    replace(note);
    try {
      await post(path, body);
      replace(note, h('div', { class: 'notice', id: 'deployment-action-result' }, `${what}: done.`));
    } catch (e) {
      replace(note, errorBox(e, `${what} failed`));
    }
  };
  let headKey = null;
  const drawHead = () => {
    // Re-render only on a change, so a half-confirmed Fail stays armed.
    const canary = d && Object.values(d.TaskGroups || {}).some((g) => g.DesiredCanaries > 0 && !g.Promoted);
    const active = d && ['running', 'paused', 'blocked'].includes(d.Status);
    const key = d ? `${d.Status}|${canary}` : '';
    if (key === headKey) return;
    headKey = key;
    const actions = [];
    if (active && canary) {
      actions.push(h('button', { class: 'primary', type: 'button', id: 'deployment-promote',
        onclick: () => act('Promote', `/v1/deployment/promote/${enc(id)}`, { DeploymentID: id, All: true }) }, 'Promote canaries'));
    }
    if (active) {
      const fail = confirmButton('Fail', 'Confirm fail', () => act('Fail', `/v1/deployment/fail/${enc(id)}`, { DeploymentID: id }));
      fail.id = 'deployment-fail';
      actions.push(fail);
    }
    replace(head, h('h1', null, `Deployment ${shortId(id)}`, d ? pill(d.Status) : null), actions.length ? h('div', { class: 'actions' }, actions) : null);
  };
  const draw = () => {
    drawHead();
    if (!d) {
      replace(out, err ? errorBox(err, 'Could not load the deployment') : loading());
      return;
    }
    const groups = Object.entries(d.TaskGroups || {}).sort(([a], [b]) => a.localeCompare(b)).map(([name, g]) => [
      name, td('num', g.DesiredTotal), td('num', g.PlacedAllocs), td('num', g.HealthyAllocs), td('num', g.UnhealthyAllocs),
      g.DesiredCanaries ? `${(g.PlacedCanaries || []).length} / ${g.DesiredCanaries}${g.Promoted ? ' · promoted' : ''}` : '–',
      [g.AutoPromote ? 'auto-promote' : '', g.AutoRevert ? 'auto-revert' : ''].filter(Boolean).join(', ') || '–',
    ]);
    replace(out, err ? errorBox(err, 'Lost the deployment') : null,
      h('div', { class: 'panel' }, kv([
        ['Job', h('span', null, jobLink(d), ` version ${d.JobVersion}`)], ['Status', d.StatusDescription || d.Status], ['Progress', progress(d)],
      ])),
      h('h2', null, 'Task groups'),
      table(['Group', { label: 'Desired', class: 'num' }, { label: 'Placed', class: 'num' }, { label: 'Healthy', class: 'num' },
        { label: 'Unhealthy', class: 'num' }, 'Canaries', 'Options'], groups, { id: 'deployment-groups' }));
  };
  watch(`/v1/deployment/${enc(id)}`, (v) => { d = v; err = null; draw(); }, (e) => { err = e; draw(); }, signal,
    { topics: ['Deployment'], keys: [id] });
}
