// pages/alloc.js: one allocation: task states and their event timeline,
// live resource usage, a live log tail, a file browser of the alloc dir and
// an exec terminal (exec.js).
import { watch, get, post, raw, stream, url, delay } from '../api.js';
import { execTerminal } from './exec.js';
import {
  h, replace, table, td, pill, link, when, errorBox, loading, enc, shortId, kv, bytes, mhz, bar, toMs, confirmButton, restarts,
  gpuIdleBadge,
} from '../dom.js';

export function render(root, { id }, { signal }) {
  let alloc = null;
  let err = null;
  const head = h('div', { class: 'page-head' }, h('h1', null, `Allocation ${shortId(id)}`));
  const crumbs = h('div', { class: 'sub' });
  const note = h('div');
  const summary = h('div', { id: 'alloc-summary' }, loading());
  const tasksEl = h('div', { id: 'alloc-tasks' });
  const servicesEl = h('div', { id: 'alloc-services' });
  const usageEl = h('div', { id: 'alloc-stats' }, h('span', { class: 'muted' }, 'Waiting for the first sample…'));
  const logsEl = h('div', { id: 'alloc-logs' });
  const filesEl = h('div', { id: 'alloc-files' });
  const execEl = h('div', { id: 'alloc-exec' });
  root.append(crumbs, head, note, summary,
    h('h2', null, 'Tasks'), tasksEl,
    h('h2', null, 'Services'), servicesEl,
    h('h2', null, 'Resource usage'), usageEl,
    h('h2', null, 'Logs'), logsEl,
    h('h2', null, 'Files'), filesEl,
    h('h2', null, 'Exec'), execEl);

  let headKey = null;
  const draw = () => {
    if (!alloc) {
      replace(summary, err ? errorBox(err, 'Could not load the allocation') : loading());
      return;
    }
    replace(crumbs, link('/ui/jobs', 'Jobs'), ' / ', link(`/ui/jobs/${enc(alloc.JobID)}${alloc.Namespace !== 'default' ? `?namespace=${enc(alloc.Namespace)}` : ''}`, alloc.JobID), ' / ', alloc.Name);
    const key = `${alloc.ClientStatus}|${alloc.DesiredStatus}`;
    if (key !== headKey) {
      headKey = key;
      const stopBtn = confirmButton('Stop allocation', 'Confirm stop', async () => {
        try {
          await post(`/v1/allocation/${enc(alloc.ID)}/stop`, {});
          replace(note, h('div', { class: 'notice' }, 'Stop requested; the scheduler will replace it if the job still wants it.'));
        } catch (e) {
          replace(note, errorBox(e, 'Stop failed'));
        }
      });
      replace(head, h('h1', null, `Allocation ${shortId(alloc.ID)}`, h('span', { id: 'alloc-status' }, pill(alloc.ClientStatus))),
        alloc.DesiredStatus === 'run' ? h('div', { class: 'actions' }, stopBtn) : null);
    }
    replace(summary, err ? errorBox(err, 'Lost track of the allocation') : null, h('div', { class: 'grid' },
      h('div', { class: 'panel' }, kv([
        ['ID', h('span', { class: 'mono' }, alloc.ID)], ['Name', alloc.Name],
        ['Job', link(`/ui/jobs/${enc(alloc.JobID)}`, alloc.JobID)], ['Group', alloc.TaskGroup],
        ['Node', link(`/ui/nodes/${alloc.NodeID}`, alloc.NodeName || shortId(alloc.NodeID))],
        ['Created', when(alloc.CreateTime)], ['Modified', when(alloc.ModifyTime)],
      ])),
      h('div', { class: 'panel' }, kv([
        ['Client status', pill(alloc.ClientStatus)], ['Client description', alloc.ClientDescription || '–'],
        ['Desired', alloc.DesiredStatus], ['Desired description', alloc.DesiredDescription || '–'],
        ['Restarts', restarts(alloc)],
        alloc.GPUUsage ? ['GPU usage', h('span', { id: 'alloc-gpu-usage' },
          `${Math.round(alloc.GPUUsage.UtilPercent)}% of ${alloc.GPUUsage.GPUs} GPU${alloc.GPUUsage.GPUs === 1 ? '' : 's'} `,
          alloc.DesiredStatus === 'run' ? gpuIdleBadge(alloc.GPUUsage) : null)] : null,
        alloc.PreviousAllocation ? ['Replaces', link(`/ui/allocations/${alloc.PreviousAllocation}`, shortId(alloc.PreviousAllocation))] : null,
        alloc.NextAllocation ? ['Replaced by', link(`/ui/allocations/${alloc.NextAllocation}`, shortId(alloc.NextAllocation))] : null,
      ]))));
    replace(tasksEl, tasksView());
    logs.setTasks(taskNames());
    term.setTasks(taskNames());
  };

  const taskNames = () => {
    const tg = alloc?.Job?.TaskGroups?.find((g) => g.Name === alloc.TaskGroup);
    const names = tg ? tg.Tasks.map((t) => t.Name) : Object.keys(alloc?.TaskStates || {});
    return names.sort();
  };

  const tasksView = () => {
    const states = alloc.TaskStates || {};
    const names = taskNames();
    if (!names.length) return h('div', { class: 'empty' }, 'No task has reported yet.');
    return h('div', { class: 'grid' }, names.map((n) => {
      const st = states[n] || { State: 'pending', Events: [] };
      const evs = [...(st.Events || [])].sort((a, b) => b.Time - a.Time);
      return h('div', { class: 'panel task', dataset: { task: n, state: st.State } },
        h('h3', null, n, ' ', pill(st.Failed ? 'failed' : st.State)),
        kv([['Restarts', st.Restarts || 0], ['Started', when(st.StartedAt)], ['Finished', when(st.FinishedAt)]]),
        h('h3', null, 'Events'),
        evs.length ? h('ol', { class: 'timeline' }, evs.map((e) => h('li', { class: e.FailsTask || e.DriverError ? 'bad' : '' },
          h('time', { title: new Date(toMs(e.Time)).toLocaleString() }, new Date(toMs(e.Time)).toLocaleTimeString()),
          h('b', null, e.Type), e.DisplayMessage || e.Message ? ` — ${e.DisplayMessage || e.Message}` : '',
          e.ExitCode ? ` (exit ${e.ExitCode})` : ''))) : h('div', { class: 'muted' }, 'No events yet.'));
    }));
  };

  const logs = logTail(logsEl, id, signal);
  files(filesEl, id, signal);
  const term = execTerminal(execEl, id, signal);
  const stats = usage(usageEl, id, () => alloc, signal);

  services(servicesEl, id, signal);

  watch(`/v1/allocation/${enc(id)}`, (a) => {
    const firstRead = !alloc;
    alloc = a;
    err = null;
    draw();
    if (firstRead) stats.wake();
  }, (e) => {
    err = e;
    draw();
  }, signal, { topics: ['Allocation'], keys: [id] });
}

// services shows the alloc's native service registrations (live, with the
// Service events) and the latest result of each check, read from the
// node whenever a registration changes.
function services(el, id, signal) {
  replace(el, h('div', { class: 'muted' }, 'No services registered.'));
  watch(`/v1/allocation/${enc(id)}/services`, async (regs) => {
    let checks = {};
    try {
      checks = (await get(`/v1/client/allocation/${enc(id)}/checks`, { signal })) || {};
    } catch (e) {
      if (signal.aborted) return;
    }
    const results = Object.values(checks).sort((a, b) => (a.Service + a.Check).localeCompare(b.Service + b.Check));
    if (!regs.length && !results.length) {
      replace(el, h('div', { class: 'muted' }, 'No services registered.'));
      return;
    }
    replace(el, regs.length ? table(['Service', 'Address', 'Health', 'Tags'], regs.map((r) => [
      r.ServiceName, td('mono', `${r.Address}:${r.Port}`), pill(r.Health || 'passing'), (r.Tags || []).join(', '),
    ])) : null, results.length ? table(['Check', 'Service', 'Task', 'Status', 'Output'], results.map((c) => [
      c.Check, c.Service, c.Task || '(group)', pill(c.Health || c.Status), (c.Output || '').split('\n')[0],
    ])) : null);
  }, () => {}, signal, { topics: ['Service'], keys: [id] });
}

// usage polls the client's stats endpoint every 2 s while the alloc runs;
// wake() reads now (the first read comes as soon as the alloc is known).
function usage(el, id, getAlloc, signal) {
  const hist = new Map(); // task -> [{cpu, mem}]
  let nap = null;
  signal.addEventListener('abort', () => nap?.abort(), { once: true });
  (async () => {
    while (!signal.aborted) {
      const a = getAlloc();
      if (a && !['pending'].includes(a.ClientStatus)) {
        if (['complete', 'failed', 'lost'].includes(a.ClientStatus)) {
          replace(el, h('div', { class: 'muted' }, `The allocation is ${a.ClientStatus}; no live usage.`));
          return;
        }
        try {
          const st = await get(`/v1/client/allocation/${enc(id)}/stats`, { signal });
          draw(st, a);
        } catch (e) {
          if (e.name === 'AbortError') return;
          replace(el, errorBox(e, 'Could not read resource usage'));
        }
      }
      nap = new AbortController();
      const napped = nap.signal;
      try {
        await delay(2000, napped);
      } catch {
        if (signal.aborted) return;
      }
    }
  })();

  function draw(st, a) {
    const rows = Object.entries(st?.Tasks || {}).sort(([x], [y]) => x.localeCompare(y)).map(([name, t]) => {
      const ru = t.ResourceUsage || {};
      const cpu = ru.CpuStats || {};
      const mem = ru.MemoryStats || {};
      const res = a.AllocatedResources?.Tasks?.[name];
      const cpuAlloc = res?.Cpu?.CpuShares || 0;
      const memAlloc = (res?.Memory?.MemoryMB || 0) * 1024 * 1024;
      const memUsed = mem.RSS || mem.Usage || 0;
      const hs = hist.get(name) || [];
      hs.push({ cpu: cpu.TotalTicks || 0, mem: memUsed });
      if (hs.length > 60) hs.shift();
      hist.set(name, hs);
      return [
        h('b', null, name),
        td('', bar(cpu.TotalTicks || 0, cpuAlloc, 'cpu', `${mhz(Math.round(cpu.TotalTicks || 0))} / ${mhz(cpuAlloc)} · ${(cpu.Percent || 0).toFixed(1)}%`)),
        td('', bar(memUsed, memAlloc, 'mem', `${bytes(memUsed)} / ${bytes(memAlloc)}`)),
        td('opt', spark(hs.map((x) => x.cpu), cpuAlloc, 'var(--cpu)'), spark(hs.map((x) => x.mem), memAlloc, 'var(--mem)')),
      ];
    });
    replace(el, table(['Task', 'CPU', 'Memory', { label: 'Last 2 min', class: 'opt' }], rows, { empty: 'No usage reported yet.' }),
      h('div', { class: 'sub' }, `Sampled ${new Date(toMs(st?.Timestamp) || Date.now()).toLocaleTimeString()}, every 2 s.`));
  }
  return { wake: () => nap?.abort() };
}

function spark(values, max, color) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('viewBox', '0 0 60 20');
  svg.setAttribute('preserveAspectRatio', 'none');
  const top = Math.max(max || 0, ...values, 1);
  const pts = values.map((v, i) => `${i * (60 / 59)},${(20 - (v / top) * 19).toFixed(1)}`).join(' ');
  const pl = document.createElementNS(ns, 'polyline');
  pl.setAttribute('points', pts);
  pl.style.stroke = color;
  svg.append(pl);
  return svg;
}

// logTail streams a task's stdout/stderr through the logs API with follow on/off.
function logTail(el, id, signal) {
  const task = h('select', { 'aria-label': 'Task', id: 'log-task' });
  const type = h('select', { 'aria-label': 'Stream', id: 'log-type' }, h('option', { value: 'stdout' }, 'stdout'), h('option', { value: 'stderr' }, 'stderr'));
  const follow = h('input', { type: 'checkbox', id: 'log-follow', checked: true });
  const state = h('span', { class: 'sub', id: 'log-state' });
  const pre = h('pre', { class: 'log', id: 'log', tabindex: '0', 'aria-label': 'Log output' });
  el.append(h('div', { class: 'toolbar' }, task, type, h('label', null, follow, 'Follow'), state), pre);
  let ctl = null;
  let names = [];
  const MAX = 256 * 1024;

  const start = async () => {
    ctl?.abort();
    if (!task.value || signal.aborted) return;
    ctl = new AbortController();
    const my = ctl;
    const stop = () => my.abort();
    signal.addEventListener('abort', stop, { once: true });
    pre.textContent = '';
    pre.classList.toggle('stderr', type.value === 'stderr');
    const params = { task: task.value, type: type.value, plain: 'true', origin: 'end', offset: 64 * 1024 };
    if (follow.checked) params.follow = 'true';
    state.textContent = follow.checked ? 'following…' : 'loading…';
    try {
      const res = await raw('GET', url(`/v1/client/fs/logs/${enc(id)}`, params), undefined, { signal: my.signal });
      await stream(res, (text) => {
        const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.append(text);
        if (pre.textContent.length > MAX) pre.textContent = pre.textContent.slice(-MAX / 2);
        if (atBottom) pre.scrollTop = pre.scrollHeight;
      }, my.signal);
      if (!my.signal.aborted) state.textContent = follow.checked ? 'stream ended (the task finished)' : 'end of log';
    } catch (e) {
      if (e.name === 'AbortError' || my.signal.aborted) {
        if (!signal.aborted && my === ctl) state.textContent = 'paused';
        return;
      }
      replace(pre);
      el.querySelector('.error')?.remove();
      pre.before(errorBox(e, 'Could not read the log'));
      state.textContent = '';
    } finally {
      signal.removeEventListener('abort', stop);
    }
  };
  const restart = () => {
    el.querySelector('.error')?.remove();
    start();
  };
  task.addEventListener('change', restart);
  type.addEventListener('change', restart);
  follow.addEventListener('change', () => {
    if (follow.checked) restart();
    else {
      ctl?.abort();
      state.textContent = 'paused';
    }
  });
  return {
    setTasks(list) {
      if (list.join() === names.join()) return;
      const was = task.value;
      names = list;
      replace(task, list.map((n) => h('option', { value: n }, n)));
      if (list.includes(was)) task.value = was;
      if (task.value !== was || !ctl) restart();
    },
  };
}

// files browses the alloc dir with /v1/client/fs/ls and /cat.
function files(el, id, signal) {
  const crumbs = h('div', { class: 'crumbs' });
  const list = h('div');
  const view = h('div', null, h('div', { class: 'muted' }, 'Choose a file to see its content.'));
  el.append(h('div', { class: 'files' }, h('div', null, crumbs, list), view));
  const open = async (dir) => {
    const parts = dir.split('/').filter(Boolean);
    replace(crumbs, link('#', 'alloc', { onclick: (e) => { e.preventDefault(); open('/'); } }),
      parts.map((p, i) => ['/', link('#', p, { onclick: (e) => { e.preventDefault(); open('/' + parts.slice(0, i + 1).join('/')); } })]));
    replace(list, loading());
    try {
      const ents = (await get(url(`/v1/client/fs/ls/${enc(id)}`, { path: dir }), { signal })) || [];
      ents.sort((a, b) => (b.IsDir - a.IsDir) || a.Name.localeCompare(b.Name));
      const p = (n) => (dir.endsWith('/') ? dir : dir + '/') + n;
      replace(list, table(['Name', { label: 'Size', class: 'num' }, { label: 'Modified', class: 'opt' }], ents.map((f) => [
        f.IsDir
          ? link('#', `${f.Name}/`, { class: 'dir', onclick: (e) => { e.preventDefault(); open(p(f.Name)); } })
          : link('#', f.Name, { class: 'file', onclick: (e) => { e.preventDefault(); cat(p(f.Name), f.Size); } }),
        td('num', f.IsDir ? '' : bytes(f.Size)), td('opt', when(f.ModTime)),
      ]), { id: 'files-table', empty: 'Empty directory.' }));
    } catch (e) {
      if (e.name === 'AbortError') return;
      replace(list, errorBox(e, `Could not list ${dir}`));
    }
  };
  const cat = async (path, size) => {
    replace(view, loading());
    const LIMIT = 512 * 1024;
    const ctl = new AbortController();
    signal.addEventListener('abort', () => ctl.abort(), { once: true });
    let text = '';
    let truncated = false;
    const show = () => replace(view, h('div', { class: 'sub mono' }, path, truncated ? ` (first ${bytes(LIMIT)} of ${bytes(size)})` : ''),
      h('pre', { id: 'file-content' }, text.slice(0, LIMIT)));
    try {
      const res = await raw('GET', url(`/v1/client/fs/cat/${enc(id)}`, { path }), undefined, { signal: ctl.signal });
      await stream(res, (t) => {
        text += t;
        if (text.length >= LIMIT) {
          truncated = true;
          ctl.abort();
        }
      }, ctl.signal);
      show();
    } catch (e) {
      if (signal.aborted) return;
      if (truncated) show();
      else replace(view, errorBox(e, `Could not read ${path}`));
    }
  };
  open('/');
}
