// ns.js: the namespace switcher in the top bar. The namespace chosen lives
// in the URL (?namespace=), so it survives a reload and a shared link:
// the list pages (jobs, deployments, evaluations, variables) read it with
// listNamespace, and the top bar's links carry it from page to page.
import { get } from './api.js';
import { navigate } from './router.js';
import { h, replace } from './dom.js';

// Pages whose list the switcher filters; on any other page (one job, one
// allocation, ...) choosing a namespace opens its jobs.
const LISTS = ['/ui/jobs', '/ui/deployments', '/ui/evaluations', '/ui/variables'];

/** chosen is the namespace in the URL ('' = all namespaces). */
export const chosen = () => new URLSearchParams(location.search).get('namespace') || '';

/** listNamespace is the ?namespace= a list request sends: the one chosen, or '*' for all. */
export const listNamespace = (query) => query.get('namespace') || '*';

/** withNamespace adds the chosen namespace to a UI path. */
export function withNamespace(path, ns = chosen()) {
  if (!ns) return path;
  const u = new URL(path, location.origin);
  u.searchParams.set('namespace', ns);
  return u.pathname + u.search;
}

/** mountSwitcher fills the <select> from GET /v1/namespaces and keeps it and the top bar's links in step with the URL. */
export function mountSwitcher(select) {
  let names = [];
  const fill = () => {
    const want = chosen();
    const all = [...new Set([...names, ...(want ? [want] : [])])].sort();
    replace(select, h('option', { value: '' }, 'All namespaces'), all.map((n) => h('option', { value: n }, n)));
    select.value = want;
  };
  const load = async () => {
    try {
      names = ((await get('/v1/namespaces')) || []).map((n) => n.Name);
    } catch {
      // Without a token that may list them, the switcher offers what the URL names.
    }
    fill();
  };
  select.addEventListener('focus', load);
  select.addEventListener('change', () => {
    const ns = select.value;
    const onList = LISTS.includes(location.pathname.replace(/\/$/, ''));
    const u = new URL(onList ? location.href : '/ui/jobs', location.origin);
    if (ns) u.searchParams.set('namespace', ns);
    else u.searchParams.delete('namespace');
    navigate(u.pathname + u.search);
  });
  load();
  // sync runs on every route change: the select shows the URL's namespace
  // and the top bar's links keep it.
  return () => {
    if (select.value !== chosen()) fill();
    for (const a of document.querySelectorAll('#nav a[data-nav], header.top a.brand')) {
      const base = a.dataset.base || (a.dataset.base = a.getAttribute('href'));
      a.setAttribute('href', LISTS.includes(base) ? withNamespace(base) : base);
    }
  };
}
