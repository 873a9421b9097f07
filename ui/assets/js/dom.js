// dom.js: a tiny element builder and the formatting shared by the pages.

/**
 * h builds an element: h('a', {href: '/ui/jobs', class: 'x'}, 'text', child).
 * Attributes starting with "on" become listeners; "dataset" and "style" take
 * objects; null/false children are skipped; strings become text nodes (never HTML).
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'style') Object.assign(el.style, v);
      else if (k === 'class') el.className = v;
      else if (k in el && typeof v !== 'string') el[k] = v;
      else el.setAttribute(k, v === true ? '' : v);
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** replace swaps el's children for the given ones. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** table builds a scrollable table: cols are header labels (or {label, class}); rows are arrays of cells or <tr>s. */
export function table(cols, rows, { empty = 'Nothing here yet.', id } = {}) {
  const head = h('tr', null, cols.map((c) => (typeof c === 'string' ? h('th', null, c) : h('th', { class: c.class }, c.label))));
  const body = rows.length
    ? rows.map((r) => (r instanceof Node ? r : h('tr', null, r.map((c) => (c instanceof Node && c.tagName === 'TD' ? c : h('td', null, c))))))
    : [h('tr', null, h('td', { class: 'empty', colSpan: cols.length }, empty))];
  return h('div', { class: 'table-wrap' }, h('table', { id }, h('thead', null, head), h('tbody', null, body)));
}

/** td makes a cell with a class (e.g. 'num', 'opt', 'wrap'). */
export const td = (cls, ...c) => h('td', { class: cls }, ...c);

const tone = {
  running: 'ok', ready: 'ok', complete: 'idle', successful: 'ok', eligible: 'ok', alive: 'ok', healthy: 'ok', leader: 'info',
  pending: 'info', starting: 'info', initializing: 'info', blocked: 'warn', queued: 'warn', draining: 'warn', ineligible: 'warn',
  disconnected: 'warn', leaving: 'warn', unknown: 'warn', canceled: 'idle', dead: 'idle', stopped: 'idle', left: 'idle',
  failed: 'bad', lost: 'bad', down: 'bad', unhealthy: 'bad', evict: 'warn', stop: 'idle', run: 'ok',
  passing: 'ok', warning: 'warn', critical: 'bad', success: 'ok', failure: 'bad',
};

/** pill renders a status in its colour. */
export function pill(status, cls) {
  const s = String(status || 'unknown');
  return h('span', { class: `pill ${cls || tone[s.toLowerCase()] || 'idle'}`, dataset: { status: s } }, s);
}

/** gpuIdleBadge is "GPU idle 2h13m" for an alloc whose GPUs are idle (its
 * GPUUsage.IdleSince, unix ns), else null. */
export function gpuIdleBadge(u, now = Date.now()) {
  if (!u || !u.IdleSince) return null;
  const mins = Math.max(0, Math.floor((now - u.IdleSince / 1e6) / 60000));
  const d = mins >= 60 ? `${Math.floor(mins / 60)}h${mins % 60 ? `${mins % 60}m` : ''}` : `${mins}m`;
  return h('span', { class: 'pill warn gpu-idle', title: `GPU utilization ${u.UtilPercent}%` }, `GPU idle ${d}`);
}

/** bar renders used/total as a filled bar with a label. */
export function bar(used, total, kind, label) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  const fill = h('i');
  fill.style.width = `${pct.toFixed(1)}%`;
  return h('div', {
    class: `bar ${kind}${pct >= 90 ? ' hot' : ''}`, title: `${label}: ${pct.toFixed(0)}%`, dataset: { pct: pct.toFixed(1) },
    role: 'meter', 'aria-valuemin': '0', 'aria-valuemax': String(total), 'aria-valuenow': String(used), 'aria-label': kind,
  }, h('div', { class: 'track' }, fill), h('span', null, label));
}

/** errorBox shows an API error in place: its code and message. */
export function errorBox(err, what) {
  const code = err && err.code ? err.code : 'error';
  const msg = err && err.message ? err.message : String(err);
  const hint = err && err.status === 403 ? h('p', null, 'This needs an ACL token: ', h('a', { href: '/ui/login' }, 'sign in'), '.') : null;
  return h('div', { class: 'error', role: 'alert' }, h('b', null, what ? `${what}: ${code}` : code), h('pre', null, msg), hint);
}

export const loading = (what = 'Loading…') => h('div', { class: 'loading' }, what);

/** link to a UI path (handled by the router without a reload). */
export const link = (path, text, attrs = {}) => h('a', { href: path, ...attrs }, text);

export const shortId = (id) => (id ? String(id).slice(0, 8) : '');
export const enc = encodeURIComponent;

/** nsTime converts unix nanoseconds (or an RFC 3339 string) to ms since the epoch; 0 when unknown. */
export function toMs(t) {
  if (!t) return 0;
  if (typeof t === 'number') return t > 1e14 ? t / 1e6 : t;
  const ms = Date.parse(t);
  return Number.isNaN(ms) || ms <= 0 ? 0 : ms;
}

/** age formats how long ago t was: 4s, 3m, 2h, 5d. */
export function age(t) {
  const ms = toMs(t);
  if (!ms) return '–';
  return duration(Date.now() - ms);
}

export function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ''}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/** when renders a <time> with the age as text and the full date as its title. */
export function when(t) {
  const ms = toMs(t);
  return h('time', { datetime: ms ? new Date(ms).toISOString() : '', title: ms ? new Date(ms).toLocaleString() : '' }, ms ? `${age(t)} ago` : '–');
}

export function bytes(n) {
  if (!n && n !== 0) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${u[i]}`;
}

export const mb = (n) => bytes((n || 0) * 1024 * 1024);
export const mhz = (n) => (n >= 1000 ? `${(n / 1000).toFixed(1)} GHz` : `${n || 0} MHz`);

/** kv renders a definition list from [label, value] pairs (value may be a node). */
export function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter((p) => p).flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v ?? '–')]));
}

export function stat(value, label) {
  return h('div', { class: 'stat' }, h('b', null, value), h('span', null, label));
}

/** armed makes a two-step button: the first click arms it, the second runs action. */
export function confirmButton(label, confirmLabel, action, cls = 'danger') {
  const b = h('button', { class: cls, type: 'button' }, label);
  let armed = false;
  b.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      b.classList.add('armed');
      b.textContent = confirmLabel;
      return;
    }
    b.disabled = true;
    try {
      await action();
    } finally {
      armed = false;
      b.disabled = false;
      b.classList.remove('armed');
      b.textContent = label;
    }
  });
  b.addEventListener('blur', () => {
    if (armed && !b.disabled) {
      armed = false;
      b.classList.remove('armed');
      b.textContent = label;
    }
  });
  return b;
}

/** allocCounts sums a JobSummary's task-group counts. */
export function summaryCounts(summary) {
  const c = { queued: 0, starting: 0, running: 0, complete: 0, failed: 0, lost: 0, unknown: 0 };
  for (const g of Object.values(summary?.Summary || {})) {
    c.queued += g.Queued || 0;
    c.starting += g.Starting || 0;
    c.running += g.Running || 0;
    c.complete += g.Complete || 0;
    c.failed += g.Failed || 0;
    c.lost += g.Lost || 0;
    c.unknown += g.Unknown || 0;
  }
  return c;
}

/** countsView renders non-zero counts as coloured chips. */
export function countsView(c) {
  const parts = Object.entries(c).filter(([, n]) => n > 0)
    .map(([k, n]) => h('span', { class: `count ${k}`, title: k, dataset: { state: k } }, h('i'), `${n} ${k}`));
  return h('span', { class: 'counts' }, parts.length ? parts : h('span', { class: 'muted' }, 'none'));
}

/**
 * resources sums an alloc's AllocatedResources: cpu MHz, memory MB, GPU device IDs, gpuMilli (thousandths
 * of a GPU held: a whole one is 1000, a share its Milli) and grants (one {id, share} per GPU held; share
 * is the AllocatedShare, null for a whole GPU).
 */
export function allocResources(ar) {
  const r = { cpu: 0, mem: 0, gpus: [], gpuMilli: 0, grants: [] };
  for (const t of Object.values(ar?.Tasks || {})) {
    r.cpu += t.Cpu?.CpuShares || 0;
    r.mem += t.Memory?.MemoryMB || 0;
    for (const d of t.Devices || []) {
      if (d.Type !== 'gpu') continue;
      for (const id of d.DeviceIDs || []) {
        r.gpus.push(id);
        r.gpuMilli += d.Share ? d.Share.Milli || 0 : 1000;
        r.grants.push({ id, share: d.Share || null });
      }
    }
  }
  return r;
}

/** fmtGPUs formats thousandths of a GPU as GPUs: 6, 0.25, 2.125. */
export const fmtGPUs = (milli) => String(Math.round(milli || 0) / 1000);

/** shareAsk formats a DeviceShare asked of each device: "0.25 mps, limit 0.5", "10 GiB time-slicing". */
export function shareAsk(s) {
  const amount = s.MemoryMB ? mb(s.MemoryMB) : String(s.Fraction);
  return `${amount} ${s.Mode || 'time-slicing'}${s.Limit ? `, limit ${s.Limit}` : ''}`;
}

/**
 * shareGrant formats an AllocatedShare held of each device: "0.25 mps, limit 0.5, 20 GiB" (the limit only
 * above the share; without the mode where the page shows it once per device).
 */
export function shareGrant(s, withMode = true) {
  const parts = [withMode ? `${fmtGPUs(s.Milli)} ${s.Mode || 'time-slicing'}` : fmtGPUs(s.Milli)];
  if (s.LimitMilli > s.Milli) parts.push(`limit ${fmtGPUs(s.LimitMilli)}`);
  if (s.MemoryMB) parts.push(mb(s.MemoryMB));
  return parts.join(', ');
}

/** nodeCapacity is what a node offers to allocations (total minus reserved). */
export function nodeCapacity(n) {
  const nr = n.NodeResources || {};
  const rr = n.ReservedResources || {};
  const gpus = (nr.Devices || []).filter((d) => d.Type === 'gpu').flatMap((d) => d.Instances || []);
  return {
    cpu: Math.max(0, (nr.Cpu?.CpuShares || 0) - (rr.Cpu?.CpuShares || 0)),
    mem: Math.max(0, (nr.Memory?.MemoryMB || 0) - (rr.Memory?.MemoryMB || 0)),
    gpus,
  };
}

/** liveAlloc reports whether an allocation still holds its resources. */
export const liveAlloc = (a) => a.DesiredStatus === 'run' && !['complete', 'failed', 'lost'].includes(a.ClientStatus);

/** usageByNode sums the resources of live allocations per node ID (gpus: the GPU IDs held, a shared one once per holder). */
export function usageByNode(allocs) {
  const m = new Map();
  for (const a of allocs || []) {
    if (!liveAlloc(a)) continue;
    const u = m.get(a.NodeID) || { cpu: 0, mem: 0, gpus: [], gpuMilli: 0, allocs: [] };
    const r = allocResources(a.AllocatedResources);
    u.cpu += r.cpu;
    u.mem += r.mem;
    u.gpus.push(...r.gpus);
    u.gpuMilli += r.gpuMilli;
    u.allocs.push(a);
    m.set(a.NodeID, u);
  }
  return m;
}

/** restarts sums the restarts of an allocation's tasks. */
export const restarts = (a) => Object.values(a.TaskStates || {}).reduce((n, t) => n + (t.Restarts || 0), 0);

/** debounce runs fn at most once per ms, trailing. */
export function debounce(fn, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}
