// api.js: fetch helpers for drover's REST API, blocking queries, the event
// stream, and the agent-connection state shown in the top bar.

/** An error answered by the API ({"error":{"code","message"}}) or a failed connection (status 0). */
export class ApiError extends Error {
  constructor(status, code, message, path) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.path = path;
  }
}

// Connection state: true while the last request reached the agent.
const connListeners = new Set();
let connected = null;

/** onConnection calls fn(ok) now and on every change; returns an unsubscribe function. */
export function onConnection(fn) {
  connListeners.add(fn);
  if (connected !== null) fn(connected);
  return () => connListeners.delete(fn);
}

function setConnected(ok) {
  if (ok === connected) return;
  connected = ok;
  for (const fn of connListeners) fn(ok);
}

/** url builds a path with query parameters, skipping empty ones. */
export function url(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  if (!s) return path;
  return path + (path.includes('?') ? '&' : '?') + s;
}

async function errorFrom(res, path) {
  let code = `http_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text);
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    if (text.trim()) message = text.trim().slice(0, 500);
  }
  return new ApiError(res.status, code, message, path);
}

/** raw performs a request and returns the Response once it is 2xx; it throws ApiError otherwise. */
export async function raw(method, path, body, { signal } = {}) {
  const init = { method, signal, headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    setConnected(false);
    throw new ApiError(0, 'unreachable', `cannot reach the agent (${e.message})`, path);
  }
  setConnected(true);
  if (!res.ok) throw await errorFrom(res, path);
  return res;
}

/** request returns {data, index}: the decoded JSON body and the X-Drover-Index header. */
export async function request(method, path, body, opts) {
  const res = await raw(method, path, body, opts);
  const index = Number(res.headers.get('X-Drover-Index') || 0);
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      throw new ApiError(res.status, 'bad_response', `invalid JSON from ${path}`, path);
    }
  }
  return { data, index };
}

export const get = (path, opts) => request('GET', path, undefined, opts).then((r) => r.data);
export const put = (path, body, opts) => request('PUT', path, body, opts).then((r) => r.data);
export const post = (path, body, opts) => request('POST', path, body, opts).then((r) => r.data);
export const del = (path, opts) => request('DELETE', path, undefined, opts).then((r) => r.data);

/** delay resolves after ms, or rejects with AbortError when signal aborts. */
export function delay(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new DOMException('aborted', 'AbortError'));
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new DOMException('aborted', 'AbortError'));
    }, { once: true });
  });
}

/**
 * watch runs a blocking query on path until signal aborts: the first answer
 * and every answer with a new index go to onData(data, index); errors go to
 * onError(err) and the query is retried with backoff (the page shows the
 * error in place and recovers by itself).
 */
export async function watch(path, onData, onError, signal, wait = '60s') {
  let index = 0;
  let backoff = 500;
  let first = true;
  while (!signal.aborted) {
    try {
      const r = await request('GET', index ? url(path, { index, wait }) : path, undefined, { signal });
      backoff = 500;
      if (first || r.index !== index) {
        first = false;
        index = r.index;
        onData(r.data, r.index);
      }
    } catch (e) {
      if (e.name === 'AbortError' || signal.aborted) return;
      // A bug in a page's renderer lands here too: show it in place and log it.
      if (!(e instanceof ApiError)) console.error('page update failed:', e);
      first = true;
      index = 0;
      onError(e);
      try {
        await delay(backoff, signal);
      } catch {
        return;
      }
      backoff = Math.min(backoff * 2, 5000);
    }
  }
}

/**
 * lines reads a streamed response body and calls onText(chunk) with decoded
 * text as it arrives; it returns when the body ends or signal aborts.
 */
export async function stream(res, onText, signal) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  const stop = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      onText(dec.decode(value, { stream: true }));
    }
    const tail = dec.decode();
    if (tail) onText(tail);
  } finally {
    signal?.removeEventListener('abort', stop);
  }
}

// The event bus: one /v1/event/stream connection for the whole app. Pages
// subscribe by topic; the stream's heartbeats also drive the connection
// indicator.
const eventListeners = new Set();

/** onEvents calls fn(events) for each batch whose topic is in topics ('*' = all); returns an unsubscribe function. */
export function onEvents(topics, fn) {
  const l = { topics: new Set(topics), fn };
  eventListeners.add(l);
  return () => eventListeners.delete(l);
}

function dispatch(batch) {
  const events = batch.Events || [];
  if (!events.length) return;
  for (const l of eventListeners) {
    const mine = l.topics.has('*') ? events : events.filter((e) => l.topics.has(e.Topic) || e.Topic === 'Reconnect');
    if (mine.length) {
      try {
        l.fn(mine);
      } catch (e) {
        console.error('event listener', e);
      }
    }
  }
}

/** runEventStream keeps the event stream open until signal aborts, reconnecting with backoff. */
export async function runEventStream(signal) {
  let backoff = 500;
  let opened = false;
  while (!signal.aborted) {
    try {
      const res = await raw('GET', '/v1/event/stream', undefined, { signal });
      backoff = 500;
      // After a reconnect, tell every listener to refetch what it missed.
      if (opened) dispatch({ Events: [{ Topic: 'Reconnect' }] });
      opened = true;
      let buf = '';
      await stream(res, (text) => {
        setConnected(true);
        buf += text;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          let batch;
          try {
            batch = JSON.parse(line);
          } catch {
            continue;
          }
          dispatch(batch);
        }
      }, signal);
      if (signal.aborted) return;
      // The stream ended (agent shutting down): treat it as a lost connection.
      setConnected(false);
    } catch (e) {
      if (e.name === 'AbortError' || signal.aborted) return;
      if (e.status === 0) setConnected(false);
      // No event stream on this agent (an old or client-only agent): the
      // pages still update through their blocking queries.
      if (e.status === 404) return;
      // 503 (no server role, or no leader yet): try again, less often.
      if (e.status === 503) backoff = Math.max(backoff, 15000);
    }
    try {
      await delay(backoff, signal);
    } catch {
      return;
    }
    backoff = Math.min(backoff * 2, backoff > 5000 ? 30000 : 5000);
  }
}

/** probe checks that the agent answers; used while disconnected. */
export async function probe(signal) {
  try {
    await raw('GET', '/v1/status/leader', undefined, { signal });
    return true;
  } catch {
    return false;
  }
}
