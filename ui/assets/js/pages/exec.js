// pages/exec.js: a minimal exec terminal for the allocation page. It runs
// a command in a task over the agent's exec websocket
// (/v1/client/allocation/{id}/exec, the protocol of `drover alloc exec`:
// JSON frames, base64 data) without a TTY: line input, stdout and stderr
// shown as text, the exit code at the end. Leaving the page closes it.
import { auth } from '../api.js';
import { h, replace } from '../dom.js';

const enc = new TextEncoder();

// b64 encodes text as the base64 of its UTF-8 bytes ([]byte in JSON).
function b64(text) {
  let s = '';
  for (const b of enc.encode(text)) s += String.fromCharCode(b);
  return btoa(s);
}

// unb64 decodes a base64 frame's bytes; dec keeps split UTF-8 sequences.
function unb64(data, dec) {
  const bin = atob(data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return dec.decode(bytes, { stream: true });
}

/** execTerminal renders the terminal in el; setTasks(names) fills the task picker. */
export function execTerminal(el, id, signal) {
  const task = h('select', { 'aria-label': 'Task', id: 'exec-task' });
  const cmd = h('input', { type: 'text', id: 'exec-command', value: '/bin/sh', 'aria-label': 'Command', spellcheck: 'false' });
  const startBtn = h('button', { type: 'button', id: 'exec-start', class: 'primary' }, 'Run');
  const state = h('span', { class: 'sub', id: 'exec-state' });
  const out = h('pre', { class: 'log', id: 'exec-output', tabindex: '0', 'aria-label': 'Command output' });
  const input = h('input', { type: 'text', id: 'exec-input', placeholder: 'stdin: type a line, Enter sends it', disabled: true,
    'aria-label': 'Standard input', spellcheck: 'false' });
  el.append(h('div', { class: 'toolbar' }, task, cmd, startBtn, state), out, input);
  let ws = null;
  const MAX = 256 * 1024;

  const show = (text, cls) => {
    const span = h('span', cls ? { class: cls } : null, text);
    out.append(span);
    if (out.textContent.length > MAX) out.textContent = out.textContent.slice(-MAX / 2);
    out.scrollTop = out.scrollHeight;
  };
  const send = (frame) => ws?.readyState === WebSocket.OPEN && ws.send(JSON.stringify(frame));
  const stop = () => {
    if (ws) ws.close();
    ws = null;
    input.disabled = true;
    startBtn.textContent = 'Run';
  };
  signal.addEventListener('abort', stop, { once: true });

  const start = () => {
    if (ws) {
      send({ stdin: { close: true } });
      stop();
      state.textContent = 'closed';
      return;
    }
    let argv;
    try {
      argv = /^\s*\[/.test(cmd.value) ? JSON.parse(cmd.value) : cmd.value.trim().split(/\s+/).filter(Boolean);
    } catch (e) {
      state.textContent = `bad command: ${e.message}`;
      return;
    }
    if (!argv.length || !task.value) return;
    replace(out);
    const q = new URLSearchParams({ task: task.value, command: JSON.stringify(argv), tty: 'false' });
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    // The ACL token rides as a subprotocol: a browser cannot set headers on a websocket.
    const protocols = auth.token ? ['drover.exec', `drover.token.${auth.token}`] : [];
    const sock = new WebSocket(`${proto}//${location.host}/v1/client/allocation/${encodeURIComponent(id)}/exec?${q}`, protocols);
    ws = sock;
    const outDec = new TextDecoder();
    const errDec = new TextDecoder();
    let exited = false;
    state.textContent = 'connecting…';
    startBtn.textContent = 'Close';
    sock.onopen = () => {
      state.textContent = `running ${argv.join(' ')}`;
      input.disabled = false;
      input.focus();
    };
    sock.onmessage = (m) => {
      let f;
      try {
        f = JSON.parse(m.data);
      } catch {
        return;
      }
      if (f.stdout?.data) show(unb64(f.stdout.data, outDec));
      if (f.stderr?.data) show(unb64(f.stderr.data, errDec), 'stderr');
      if (f.exited) {
        exited = true;
        state.textContent = `exited with code ${f.result?.exit_code ?? 0}`;
        state.dataset.exitCode = String(f.result?.exit_code ?? 0);
      }
    };
    sock.onclose = (e) => {
      if (ws === sock) stop();
      if (!exited && !signal.aborted) state.textContent = `closed${e.reason ? `: ${e.reason}` : ' (the agent refused or ended the session)'}`;
    };
  };
  startBtn.addEventListener('click', start);
  input.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') return;
    e.preventDefault();
    show(`${input.value}\n`, 'stdin');
    send({ stdin: { data: b64(`${input.value}\n`) } });
    input.value = '';
  });

  let names = [];
  return {
    setTasks(list) {
      if (list.join('\n') === names.join('\n')) return;
      names = list;
      const keep = task.value;
      replace(task, list.map((n) => h('option', { value: n }, n)));
      if (list.includes(keep)) task.value = keep;
    },
  };
}
