// pages/jobs.js: the job list of the namespace chosen in the top bar (all by
// default), with search and a type filter, live through the event stream.
import { watch, get, url, onEvents } from '../api.js';
import { setQuery } from '../router.js';
import { h, replace, table, td, pill, link, when, errorBox, loading, summaryCounts, countsView, enc, debounce } from '../dom.js';
import { listNamespace } from '../ns.js';

export function render(root, _params, { signal, query }) {
  let jobs = null;
  let err = null;
  const search = h('input', { type: 'search', placeholder: 'Search jobs by ID or name', value: query.get('q') || '', 'aria-label': 'Search jobs', id: 'job-search' });
  const type = h('select', { 'aria-label': 'Type', id: 'job-type' }, ['', 'service', 'batch', 'system', 'sysbatch'].map((t) => h('option', { value: t }, t || 'All types')));
  type.value = query.get('type') || '';
  const out = h('div', { id: 'jobs' }, loading());
  const status = h('span', { class: 'sub' });

  root.append(
    h('div', { class: 'page-head' }, h('h1', null, 'Jobs'), status,
      h('div', { class: 'actions' }, link('/ui/run', 'Run a job', { class: 'btn' }))),
    h('div', { class: 'toolbar' }, search, type),
    out,
  );

  const draw = () => {
    if (err) {
      replace(out, errorBox(err, 'Could not list jobs'), jobs ? view() : null);
      return;
    }
    if (!jobs) return;
    replace(out, view());
  };

  const view = () => {
    const q = search.value.trim().toLowerCase();
    const list = jobs
      .filter((j) => !type.value || j.Type === type.value)
      .filter((j) => !q || j.ID.toLowerCase().includes(q) || (j.Name || '').toLowerCase().includes(q))
      .sort((a, b) => a.ID.localeCompare(b.ID) || a.Namespace.localeCompare(b.Namespace));
    status.textContent = `${list.length} of ${jobs.length}`;
    const rows = list.map((j) => {
      const st = j.Stop && j.Status !== 'dead' ? 'stopping' : j.Status;
      const href = `/ui/jobs/${enc(j.ID)}${j.Namespace !== 'default' ? `?namespace=${enc(j.Namespace)}` : ''}`;
      return h('tr', { dataset: { jobId: j.ID, status: j.Status } },
        td('', link(href, j.ID, { class: 'job-link' })),
        td('opt', j.Namespace),
        td('', j.Type),
        td('opt job-queue', link(`/ui/queues`, j.Queue || 'default')),
        td('num opt', j.Priority),
        td('', pill(st, j.Stop ? 'idle' : undefined), j.Stop ? h('span', { class: 'sub' }, ' stopped') : null),
        td('', countsView(summaryCounts(j.JobSummary))),
        td('opt', when(j.SubmitTime)));
    });
    return table(['ID', { label: 'Namespace', class: 'opt' }, 'Type', { label: 'Queue', class: 'opt' }, { label: 'Priority', class: 'num opt' }, 'Status', 'Allocations', { label: 'Submitted', class: 'opt' }],
      rows, { id: 'jobs-table', empty: jobs.length ? 'No job matches the filter.' : 'No jobs yet. Run one from the Run page.' });
  };

  const refilter = () => {
    setQuery({ q: search.value.trim(), type: type.value });
    if (jobs) replace(out, err ? errorBox(err, 'Could not list jobs') : null, view());
  };
  search.addEventListener('input', refilter);
  type.addEventListener('change', refilter);

  const path = url('/v1/jobs', { namespace: listNamespace(query) });
  watch(path, (data) => {
    jobs = data || [];
    err = null;
    draw();
  }, (e) => {
    err = e;
    draw();
  }, signal);
  // The list's index follows the jobs table only; allocation counts change
  // with allocations, which the event stream reports.
  const refresh = debounce(async () => {
    try {
      jobs = (await get(path, { signal })) || [];
      err = null;
    } catch (e) {
      if (e.name === 'AbortError') return;
      err = e;
    }
    if (!signal.aborted) draw();
  }, 200);
  const off = onEvents(['Allocation', 'Job'], refresh);
  signal.addEventListener('abort', off);
}
