// pages/evals.js: recent evaluations with status, trigger and placement failures.
import { watch, url } from '../api.js';
import { setQuery } from '../router.js';
import { h, replace, table, td, pill, link, when, errorBox, loading, shortId, enc } from '../dom.js';
import { listNamespace } from '../ns.js';
import { reasons } from './failures.js';

export function render(root, _params, { signal, query }) {
  let evals = null;
  let err = null;
  const status = h('select', { 'aria-label': 'Status', id: 'eval-status' },
    ['', 'pending', 'blocked', 'complete', 'failed', 'canceled'].map((s) => h('option', { value: s }, s || 'All statuses')));
  status.value = query.get('status') || '';
  const search = h('input', { type: 'search', placeholder: 'Filter by job, ID or trigger', value: query.get('q') || '', 'aria-label': 'Filter evaluations' });
  const count = h('span', { class: 'sub' });
  const out = h('div', { id: 'evals' }, loading());
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Evaluations'), count), h('div', { class: 'toolbar' }, search, status), out);

  const draw = () => {
    if (!evals) {
      replace(out, err ? errorBox(err, 'Could not list evaluations') : loading());
      return;
    }
    const q = search.value.trim().toLowerCase();
    const list = evals.filter((e) => !status.value || e.Status === status.value)
      .filter((e) => !q || [e.ID, e.JobID, e.TriggeredBy, e.NodeID].some((s) => (s || '').toLowerCase().includes(q)))
      .sort((a, b) => b.CreateIndex - a.CreateIndex);
    count.textContent = `${Math.min(list.length, 200)} shown of ${evals.length}`;
    const rows = list.slice(0, 200).map((e) => h('tr', { dataset: { evalId: e.ID, status: e.Status } },
      td('mono', shortId(e.ID)),
      td('', e.JobID ? link(`/ui/jobs/${enc(e.JobID)}${e.Namespace && e.Namespace !== 'default' ? `?namespace=${enc(e.Namespace)}` : ''}`, e.JobID) : '–'),
      td('opt', e.Type), td('', pill(e.Status)), td('', e.TriggeredBy),
      td('opt', e.NodeID ? link(`/ui/nodes/${e.NodeID}`, shortId(e.NodeID), { class: 'mono' }) : ''),
      td('wrap', e.StatusDescription || '', Object.entries(e.FailedTGAllocs || {}).map(([g, m]) => h('div', { class: 'sub' }, `${g}: ${reasons(m).slice(1).join('; ') || reasons(m)[0]}`))),
      td('num opt', e.Priority), td('', when(e.CreateTime))));
    replace(out, err ? errorBox(err, 'Lost the evaluation list') : null,
      table(['ID', 'Job', { label: 'Type', class: 'opt' }, 'Status', 'Triggered by', { label: 'Node', class: 'opt' }, 'Details', { label: 'Priority', class: 'num opt' }, 'Created'],
        rows, { id: 'evals-table', empty: evals.length ? 'No evaluation matches.' : 'No evaluations yet.' }));
  };
  const refilter = () => {
    setQuery({ status: status.value, q: search.value.trim() });
    draw();
  };
  status.addEventListener('change', refilter);
  search.addEventListener('input', refilter);
  watch(url('/v1/evaluations', { namespace: listNamespace(query) }), (e) => { evals = e || []; err = null; draw(); }, (e) => { err = e; draw(); }, signal, { topics: ['Evaluation'] });
}
