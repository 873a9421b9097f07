// pages/variables.js: Nomad Variables. The list by path prefix (GET
// /v1/vars?prefix=, metadata only), one variable (GET /v1/var/{path}: its
// Items, values hidden until asked), and create, edit and delete with
// check-and-set: a save sends ?cas= with the ModifyIndex the form was
// opened at (0 for a new one), so a change someone made meanwhile is
// refused (409) instead of overwritten.
import { get, put, del, url } from '../api.js';
import { setQuery } from '../router.js';
import { h, replace, table, td, link, when, errorBox, loading, kv, confirmButton, debounce } from '../dom.js';
import { listNamespace } from '../ns.js';

/** apiPath is a variable's API path: each segment encoded, the slashes kept. */
const apiPath = (path) => `/v1/var/${path.split('/').map(encodeURIComponent).join('/')}`;

/** varPage is a variable's UI page. */
const varPage = (ns, path, edit) => url(`/ui/variables/var/${path.split('/').map(encodeURIComponent).join('/')}`,
  { namespace: ns !== 'default' ? ns : '', edit: edit ? '1' : '' });

export function render(root, params, ctx) {
  if (location.pathname.replace(/\/$/, '') === '/ui/variables/new') return edit(root, null, ctx);
  if (params.path) return ctx.query.get('edit') ? edit(root, params.path, ctx) : view(root, params.path, ctx);
  return list(root, ctx);
}

function list(root, { signal, query }) {
  const ns = listNamespace(query);
  const prefix = h('input', { type: 'search', id: 'var-prefix', placeholder: 'Path prefix (e.g. nomad/jobs)', value: query.get('prefix') || '', 'aria-label': 'Path prefix' });
  const count = h('span', { class: 'sub' });
  const out = h('div', { id: 'variables' }, loading());
  const create = link(url('/ui/variables/new', { namespace: ns !== '*' ? ns : '', path: prefix.value }), 'Create variable', { class: 'btn', id: 'var-create' });
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Variables'), count, h('div', { class: 'actions' }, create)),
    h('div', { class: 'toolbar' }, prefix), out);
  let ctl = null;
  const load = async () => {
    ctl?.abort();
    ctl = new AbortController();
    const mine = ctl;
    signal.addEventListener('abort', () => mine.abort(), { once: true });
    try {
      const vars = (await get(url('/v1/vars', { prefix: prefix.value.trim(), namespace: ns }), { signal: mine.signal })) || [];
      if (mine.signal.aborted) return;
      count.textContent = `${vars.length} variable${vars.length === 1 ? '' : 's'}`;
      const rows = [...vars].sort((a, b) => a.Path.localeCompare(b.Path) || a.Namespace.localeCompare(b.Namespace)).map((v) => h('tr', { dataset: { path: v.Path, namespace: v.Namespace } },
        td('', link(varPage(v.Namespace, v.Path), v.Path, { class: 'var-link mono' })),
        td('opt', v.Namespace), td('', when(v.ModifyTime)), td('num opt', v.ModifyIndex)));
      replace(out, table(['Path', { label: 'Namespace', class: 'opt' }, 'Modified', { label: 'Index', class: 'num opt' }], rows,
        { id: 'vars-table', empty: prefix.value.trim() ? 'No variable under this prefix.' : 'No variables yet.' }));
    } catch (e) {
      if (e.name === 'AbortError' || mine.signal.aborted) return;
      replace(out, errorBox(e, 'Could not list variables'));
    }
  };
  prefix.addEventListener('input', debounce(() => {
    setQuery({ prefix: prefix.value.trim() });
    create.href = url('/ui/variables/new', { namespace: ns !== '*' ? ns : '', path: prefix.value.trim() });
    load();
  }, 200));
  load();
}

function view(root, path, { signal, query, navigate }) {
  const ns = query.get('namespace') || 'default';
  const note = h('div', { id: 'var-note' });
  const out = h('div', { id: 'variable' }, loading());
  let shown = false;
  let v = null;
  root.append(h('div', { class: 'sub' }, link(url('/ui/variables', { namespace: ns !== 'default' ? ns : '' }), 'Variables'), ' / ', path),
    h('div', { class: 'page-head' }, h('h1', { class: 'mono' }, path),
      h('div', { class: 'actions' },
        link(varPage(ns, path, true), 'Edit', { class: 'btn', id: 'var-edit' }),
        (() => {
          const b = confirmButton('Delete', 'Confirm delete', async () => {
            replace(note);
            try {
              await del(url(apiPath(path), { namespace: ns, cas: v?.ModifyIndex }));
              navigate(url('/ui/variables', { namespace: ns !== 'default' ? ns : '' }));
            } catch (e) {
              replace(note, errorBox(e, e.status === 409 ? 'Not deleted: the variable changed since this page loaded; reload to see it' : 'Delete failed'));
            }
          });
          b.id = 'var-delete';
          return b;
        })())),
    note, out);
  const draw = () => {
    const items = Object.entries(v.Items || {}).sort(([a], [b]) => a.localeCompare(b));
    replace(out,
      h('div', { class: 'panel' }, kv([['Namespace', v.Namespace], ['Path', h('span', { class: 'mono' }, v.Path)],
        ['Created', when(v.CreateTime)], ['Modified', when(v.ModifyTime)], ['Modify index', h('span', { id: 'var-modify-index' }, String(v.ModifyIndex))]])),
      h('h2', null, 'Items ', h('button', { type: 'button', id: 'var-show', onclick: () => { shown = !shown; draw(); } }, shown ? 'Hide values' : 'Show values')),
      table(['Key', 'Value'], items.map(([k, val]) => h('tr', { dataset: { key: k } },
        td('mono', k), td('wrap mono var-value', shown ? val : '••••••••'))), { id: 'var-items', empty: 'No items.' }));
  };
  get(url(apiPath(path), { namespace: ns }), { signal }).then((d) => {
    v = d;
    draw();
  }).catch((e) => {
    if (e.name !== 'AbortError') replace(out, errorBox(e, 'Could not read the variable'));
  });
}

function edit(root, path, { signal, query, navigate }) {
  const ns = query.get('namespace') || 'default';
  const isNew = !path;
  const note = h('div', { id: 'var-note' });
  const out = h('div', { id: 'variable-edit' }, isNew ? null : loading());
  root.append(h('div', { class: 'sub' }, link(url('/ui/variables', { namespace: ns !== 'default' ? ns : '' }), 'Variables'), ' / ', isNew ? 'new' : path),
    h('div', { class: 'page-head' }, h('h1', null, isNew ? 'Create variable' : ['Edit ', h('span', { class: 'mono' }, path)])), note, out);
  let cas = 0; // the ModifyIndex the form was opened at; 0 creates only
  const pathIn = h('input', { type: 'text', id: 'var-path', value: path || query.get('path') || '', placeholder: 'team/db', 'aria-label': 'Path', readOnly: !isNew, required: true });
  const nsIn = h('input', { type: 'text', id: 'var-namespace', value: ns, 'aria-label': 'Namespace', readOnly: !isNew });
  const rows = h('tbody');
  const addRow = (k = '', val = '') => rows.append(h('tr', { class: 'var-item' },
    td('', h('input', { type: 'text', class: 'var-key mono', value: k, 'aria-label': 'Key', placeholder: 'key' })),
    td('', h('input', { type: 'text', class: 'var-value mono', value: val, 'aria-label': 'Value', placeholder: 'value' })),
    td('', h('button', { type: 'button', class: 'var-remove', onclick: (e) => e.target.closest('tr').remove() }, 'Remove'))));
  const save = async (e) => {
    e.preventDefault();
    replace(note);
    const items = {};
    for (const tr of rows.querySelectorAll('tr')) {
      const k = tr.querySelector('.var-key').value.trim();
      if (k) items[k] = tr.querySelector('.var-value').value;
    }
    const p = pathIn.value.trim().replace(/^\/+|\/+$/g, '');
    if (!p) {
      replace(note, h('div', { class: 'error', role: 'alert' }, 'A variable needs a path.'));
      return;
    }
    if (!Object.keys(items).length) {
      replace(note, h('div', { class: 'error', role: 'alert' }, 'A variable needs at least one item.'));
      return;
    }
    const space = nsIn.value.trim() || 'default';
    try {
      await put(url(apiPath(p), { namespace: space, cas }), { Namespace: space, Path: p, Items: items }, { signal });
      navigate(varPage(space, p));
    } catch (err) {
      if (err.name === 'AbortError') return;
      replace(note, errorBox(err, err.status === 409
        ? (isNew ? `Not created: ${p} exists already` : 'Not saved: someone changed this variable since you opened it; reload to see their change')
        : 'Save failed'));
    }
  };
  const form = h('form', { id: 'var-form', class: 'panel', onsubmit: save },
    kv([['Path', pathIn], ['Namespace', nsIn]]),
    h('h3', null, 'Items'),
    h('div', { class: 'table-wrap' }, h('table', { id: 'var-form-items' }, h('thead', null, h('tr', null, h('th', null, 'Key'), h('th', null, 'Value'), h('th'))), rows)),
    h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'var-add-item', onclick: () => addRow() }, 'Add item'),
      h('button', { type: 'submit', class: 'primary', id: 'var-save' }, isNew ? 'Create' : 'Save'),
      link(isNew ? url('/ui/variables', { namespace: ns !== 'default' ? ns : '' }) : varPage(ns, path), 'Cancel', { class: 'btn' })));
  if (isNew) {
    addRow();
    replace(out, form);
    return;
  }
  get(url(apiPath(path), { namespace: ns }), { signal }).then((v) => {
    cas = v.ModifyIndex;
    for (const [k, val] of Object.entries(v.Items || {}).sort(([a], [b]) => a.localeCompare(b))) addRow(k, val);
    replace(out, h('div', { class: 'sub', id: 'var-cas' }, `Saving checks that the variable is still at modify index ${cas}.`), form);
  }).catch((e) => {
    if (e.name !== 'AbortError') replace(out, errorBox(e, 'Could not read the variable'));
  });
}
