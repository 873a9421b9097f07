// router.js: client-side routing over the History API. Every /ui/... URL is
// a stable deep link: the agent serves index.html for it and start() renders
// the page it names. A page module exports render(root, params, ctx) and
// stops all its work when ctx.signal aborts (on the next navigation).

const routes = [];
let current = null; // AbortController of the page shown
let onChange = () => {};

/** route registers a pattern such as '/ui/jobs/:id' (or '/ui/variables/var/*path') with a lazy page loader. */
export function route(pattern, load, nav) {
  const names = [];
  // ':name' matches one segment; '*name' the rest of the path (a variable's path has slashes).
  const re = new RegExp('^' + pattern.replace(/([:*])(\w+)/g, (_, kind, n) => {
    names.push(n);
    return kind === '*' ? '(.+?)' : '([^/]+)';
  }) + '/?$');
  routes.push({ re, names, load, nav });
}

function match(path) {
  for (const r of routes) {
    const m = r.re.exec(path);
    if (m) {
      const params = {};
      r.names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]); });
      return { r, params };
    }
  }
  return null;
}

/** navigate shows path (with its query) without a reload. */
export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

/** setQuery updates the current URL's query (for filters) without re-rendering. */
export function setQuery(params) {
  const u = new URL(location.href);
  for (const [k, v] of Object.entries(params)) {
    if (v === '' || v === null || v === undefined) u.searchParams.delete(k);
    else u.searchParams.set(k, v);
  }
  history.replaceState(null, '', u.pathname + u.search);
}

async function render() {
  const main = document.getElementById('main');
  current?.abort();
  const ctl = new AbortController();
  current = ctl;
  let path = location.pathname;
  if (path === '/ui' || path === '/ui/') {
    history.replaceState(null, '', '/ui/jobs');
    path = '/ui/jobs';
  }
  const m = match(path);
  onChange(m?.r.nav || '');
  main.replaceChildren();
  if (!m) {
    main.append(notFound(path));
    return;
  }
  let mod;
  try {
    mod = await m.r.load();
  } catch (e) {
    if (ctl.signal.aborted) return;
    const el = document.createElement('div');
    el.className = 'error';
    el.textContent = `Could not load this page's code: ${e.message}`;
    main.append(el);
    return;
  }
  if (ctl.signal.aborted) return;
  const query = new URLSearchParams(location.search);
  try {
    mod.render(main, m.params, { signal: ctl.signal, query, navigate });
  } catch (e) {
    console.error(e);
    const el = document.createElement('div');
    el.className = 'error';
    el.textContent = `This page failed: ${e.message}`;
    main.append(el);
  }
}

function notFound(path) {
  const el = document.createElement('div');
  el.className = 'error';
  el.setAttribute('role', 'alert');
  el.textContent = `No page at ${path}. `;
  const a = document.createElement('a');
  a.href = '/ui/jobs';
  a.textContent = 'Go to the jobs.';
  el.append(a);
  return el;
}

/** start renders the current URL and takes over same-origin /ui/ links. */
export function start(changed) {
  onChange = changed;
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = e.target.closest('a[href]');
    if (!a || a.target || a.hasAttribute('download')) return;
    const u = new URL(a.href, location.href);
    if (u.origin !== location.origin || !u.pathname.startsWith('/ui/')) return;
    e.preventDefault();
    if (u.pathname + u.search !== location.pathname + location.search) navigate(u.pathname + u.search);
  });
  window.addEventListener('popstate', render);
  render();
}
