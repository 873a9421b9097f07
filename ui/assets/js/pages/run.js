// pages/run.js: paste or upload a job file, plan it (diff and placement
// outcome), then run it: POST /v1/jobs/parse -> POST /v1/job/{id}/plan -> PUT /v1/jobs.
import { post, put, url } from '../api.js';
import { h, replace, table, td, errorBox, loading, enc, shortId } from '../dom.js';
import { failuresView } from './failures.js';

const KEY = 'drover.run.hcl';

export function render(root, _params, { signal, navigate }) {
  const saved = sessionStorage.getItem(KEY) || '';
  const text = h('textarea', { id: 'run-hcl', spellcheck: 'false', 'aria-label': 'Job file (HCL)', placeholder: 'job "example" {\n  group "app" {\n    task "hello" {\n      driver = "exec"\n      config { command = "/bin/echo" }\n    }\n  }\n}' });
  text.value = saved;
  const file = h('input', { type: 'file', accept: '.hcl,.nomad,.json,text/plain', id: 'run-file', 'aria-label': 'Upload a job file' });
  const planBtn = h('button', { type: 'button', class: 'primary', id: 'run-plan' }, 'Plan');
  const runBtn = h('button', { type: 'button', id: 'run-submit', disabled: true }, 'Run');
  const out = h('div', { id: 'run-result' });
  root.append(
    h('div', { class: 'page-head' }, h('h1', null, 'Run a job'),
      h('span', { class: 'sub' }, 'Paste or upload an HCL job file, plan it to see what would change, then run it.')),
    h('div', { class: 'toolbar' }, file, h('span', { class: 'actions' }, planBtn, runBtn)),
    text, out);

  let planned = null; // {job, hcl}
  const invalidate = () => {
    sessionStorage.setItem(KEY, text.value);
    if (planned && planned.hcl !== text.value) {
      planned = null;
      runBtn.disabled = true;
      runBtn.classList.remove('primary');
    }
  };
  text.addEventListener('input', invalidate);
  file.addEventListener('change', async () => {
    const f = file.files?.[0];
    if (!f) return;
    text.value = await f.text();
    invalidate();
  });

  planBtn.addEventListener('click', async () => {
    const hcl = text.value;
    sessionStorage.setItem(KEY, hcl);
    if (!hcl.trim()) {
      replace(out, errorBox({ code: 'empty', message: 'Paste a job file first.' }));
      return;
    }
    planBtn.disabled = true;
    replace(out, loading('Planning…'));
    try {
      const job = await post('/v1/jobs/parse', { JobHCL: hcl, Canonicalize: true }, { signal });
      let plan;
      try {
        plan = await post(url(`/v1/job/${enc(job.ID)}/plan`, { namespace: job.Namespace }), { Job: job, Diff: true }, { signal });
      } catch (e) {
        if (e.name === 'AbortError') return;
        replace(out, errorBox(e, 'Plan failed'));
        return;
      }
      planned = { job, hcl };
      runBtn.disabled = false;
      runBtn.classList.add('primary');
      replace(out, planView(job, plan));
    } catch (e) {
      if (e.name === 'AbortError') return;
      replace(out, errorBox(e, 'The job file does not parse'));
    } finally {
      planBtn.disabled = false;
    }
  });

  runBtn.addEventListener('click', async () => {
    if (!planned) return;
    runBtn.disabled = true;
    const { job } = planned;
    try {
      const r = await put(url('/v1/jobs', { namespace: job.Namespace }), { Job: job }, { signal });
      out.prepend(h('div', { class: 'notice', id: 'run-done' }, `Job ${job.ID} submitted; evaluation ${shortId(r?.EvalID)}.`));
      navigate(`/ui/jobs/${enc(job.ID)}${job.Namespace && job.Namespace !== 'default' ? `?namespace=${enc(job.Namespace)}` : ''}`);
    } catch (e) {
      if (e.name === 'AbortError') return;
      out.prepend(errorBox(e, 'Run failed'));
      runBtn.disabled = false;
    }
  });
}

function planView(job, plan) {
  const upd = Object.entries(plan.Annotations?.DesiredTGUpdates || {}).sort(([a], [b]) => a.localeCompare(b));
  const cols = ['Place', 'Stop', 'InPlaceUpdate', 'DestructiveUpdate', 'Migrate', 'Canary', 'Preemptions', 'Ignore'];
  const failed = failuresView(plan.FailedTGAllocs, 'These groups cannot be placed now (they would wait for capacity)');
  return h('div', { id: 'plan' },
    h('h2', null, `Plan for job "${job.ID}"`, plan.Diff?.Type ? ` · ${plan.Diff.Type}` : ''),
    plan.Warnings ? h('div', { class: 'notice' }, h('b', null, 'Warnings: '), plan.Warnings) : null,
    failed || h('div', { class: 'notice', id: 'plan-ok' }, 'Every allocation can be placed.'),
    h('h3', null, 'Placement outcome'),
    table(['Group', ...cols.map((c) => ({ label: c.replace(/([a-z])([A-Z])/g, '$1 $2'), class: 'num' }))],
      upd.map(([g, u]) => [g, ...cols.map((c) => td('num', u[c] || 0))]), { id: 'plan-updates', empty: 'No changes to allocations.' }),
    h('h3', null, 'Diff'),
    h('div', { class: 'diff', id: 'plan-diff' }, diffLines(plan.Diff)),
    h('div', { class: 'sub' }, `Job modify index ${plan.JobModifyIndex}; Run registers the job exactly as planned.`));
}

const mark = { Added: '+', Deleted: '-', Edited: '~', None: ' ' };

function diffLines(d) {
  if (!d) return h('div', { class: 'muted' }, 'No diff returned.');
  const lines = [];
  const line = (depth, type, text) => lines.push(h('div', { class: type }, `${mark[type] || ' '} ${'  '.repeat(depth)}${text}`));
  const fields = (fs, depth) => {
    for (const f of fs || []) {
      // A new job's fields left at their defaults (as `drover job plan`).
      if (f.Type === 'None' || (f.Annotations || []).includes('default')) continue;
      const val = f.Type === 'Added' ? JSON.stringify(f.New) : f.Type === 'Deleted' ? JSON.stringify(f.Old) : `${JSON.stringify(f.Old)} => ${JSON.stringify(f.New)}`;
      line(depth, f.Type, `${f.Name}: ${val}${(f.Annotations || []).length ? ` (${f.Annotations.join(', ')})` : ''}`);
    }
  };
  const objects = (os, depth) => {
    for (const o of os || []) {
      if (o.Type === 'None') continue;
      line(depth, o.Type, `${o.Name} {`);
      fields(o.Fields, depth + 1);
      objects(o.Objects, depth + 1);
      line(depth, o.Type, '}');
    }
  };
  line(0, d.Type, `Job: "${d.ID}"`);
  fields(d.Fields, 1);
  objects(d.Objects, 1);
  for (const g of d.TaskGroups || []) {
    const u = Object.entries(g.Updates || {}).map(([k, n]) => `${n} ${k}`).join(', ');
    line(1, g.Type, `Task Group: "${g.Name}"${u ? ` (${u})` : ''}`);
    fields(g.Fields, 2);
    objects(g.Objects, 2);
    for (const t of g.Tasks || []) {
      line(2, t.Type, `Task: "${t.Name}"${(t.Annotations || []).length ? ` (${t.Annotations.join(', ')})` : ''}`);
      fields(t.Fields, 3);
      objects(t.Objects, 3);
    }
  }
  return lines;
}
