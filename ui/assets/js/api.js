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

// The ACL token the UI sends (X-Drover-Token), kept in this browser's
// localStorage: set by the login page (a pasted secret or an SSO login).
const TOKEN_KEY = 'drover.token';

/** auth reads, sets and clears the ACL token the UI sends. */
export const auth = {
  get token() {
    try {
      return localStorage.getItem(TOKEN_KEY) || '';
    } catch {
      return '';
    }
  },
  set(secret) { localStorage.setItem(TOKEN_KEY, secret); },
  clear() { localStorage.removeItem(TOKEN_KEY); },
};

/** raw performs a request and returns the Response once it is 2xx; it throws ApiError otherwise. */
export async function raw(method, path, body, { signal } = {}) {
  const init = { method, signal, headers: {} };
  const token = auth.token;
  if (token) init.headers['X-Drover-Token'] = token;
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

// loader returns load(key, path, set): GET path, hand the answer to set and
// forget errs[key], or keep the error in errs[key]; then redraw, unless the
// page's signal aborted (a page's side panels: summary, evaluations ...).
export function loader(errs, signal, draw) {
  return async (key, path, set) => {
    try {
      set(await get(path, { signal }));
      delete errs[key];
    } catch (e) {
      if (e.name === 'AbortError') return;
      errs[key] = e;
    }
    if (!signal.aborted) draw();
  };
}

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

// Network accounting, read by the browser tests (window.__droverNet) and
// kept small on purpose: browsers open at most six HTTP/1.1 connections per
// host, so the UI never holds more than one event stream, one page stream
// (a log tail or a file) and MAX_LONG_POLLS blocking queries at once.
export const net = { longPolls: 0, maxLongPolls: 0, streams: 0, maxStreams: 0, live: null };
globalThis.__droverNet = net;

/** MAX_LONG_POLLS caps the blocking queries open at once (only used while the event stream is down). */
export const MAX_LONG_POLLS = 2;

function count(key, d) {
  net[key] += d;
  const max = 'max' + key[0].toUpperCase() + key.slice(1);
  if (net[key] > net[max]) net[max] = net[key];
}

// Topics a page's data may change with when it does not say.
const allTopics = ['Job', 'Allocation', 'Node', 'Evaluation', 'Deployment'];

// liveWaiters wait for a change of net.live (the event stream's state).
const liveWaiters = new Set();

function setLive(ok) {
  if (net.live === ok) return;
  net.live = ok;
  for (const fn of [...liveWaiters]) fn();
}

/**
 * changed returns {promise, cancel}: promise resolves true when an event on
 * one of topics arrives or the event stream's state changes, false when
 * signal aborts or cancel is called. Subscribing before a read means no
 * event between the read and the wait is missed.
 */
function changed(topics, keys, signal) {
  let done;
  const promise = new Promise((resolve) => {
    const mine = (e) => e.Topic === 'Reconnect' || !keys || keys.includes(e.Key) || (e.FilterKeys || []).some((k) => keys.includes(k));
    const off = onEvents(topics, (evs) => { if (evs.some(mine)) done(true); });
    const onLive = () => done(true);
    const onAbort = () => done(false);
    done = (v) => {
      off();
      liveWaiters.delete(onLive);
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    };
    liveWaiters.add(onLive);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, cancel: () => done(false) };
}

/**
 * watch keeps path's data live until signal aborts: the first answer and
 * every answer with a new index go to onData(data, index); errors go to
 * onError(err) and the read is retried with backoff (the page shows the
 * error in place and recovers by itself).
 *
 * Updates ride on the tab's one event stream: after each read, watch waits
 * for an event on opts.topics (default: all; with opts.keys, only events
 * whose Key or FilterKeys name one of them) and reads again, so any number
 * of widgets share one connection. Only while the event stream is down
 * does it fall back to blocking queries, at most MAX_LONG_POLLS of them
 * open across the tab; a watch that finds no free slot polls every 5 s.
 */
export async function watch(path, onData, onError, signal, opts = {}) {
  const { topics = allTopics, keys = null, wait = '60s' } = opts;
  let index = 0;
  let backoff = 500;
  let first = true;
  let lastRead = 0;
  let next = null; // the subscription made before the last read
  while (!signal.aborted) {
    let blocking = false;
    try {
      if (!first) {
        if (net.live) {
          // No subscription yet (the stream opened after the last read): read now.
          if (next) {
            if (!(await next.promise)) return;
            // Coalesce a burst of events into one read.
            const gap = 250 - (Date.now() - lastRead);
            if (gap > 0) await delay(gap, signal);
          }
        } else if (net.live === false && net.longPolls < MAX_LONG_POLLS) {
          blocking = true;
        } else {
          await delay(net.live === null ? 1000 : 5000, signal);
        }
      }
      next?.cancel();
      next = net.live ? changed(topics, keys, signal) : null;
      let r;
      if (blocking) {
        // A blocking query gives its slot back as soon as the event stream
        // is up again: it is aborted and the loop reads through the stream.
        const ctl = new AbortController();
        const cut = () => ctl.abort();
        signal.addEventListener('abort', cut, { once: true });
        liveWaiters.add(cut);
        count('longPolls', 1);
        try {
          r = await request('GET', index ? url(path, { index, wait }) : path, undefined, { signal: ctl.signal });
        } catch (e) {
          if (e.name !== 'AbortError' || signal.aborted) throw e;
          continue;
        } finally {
          count('longPolls', -1);
          liveWaiters.delete(cut);
          signal.removeEventListener('abort', cut);
        }
      } else {
        r = await request('GET', path, undefined, { signal });
      }
      lastRead = Date.now();
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
  next?.cancel();
}

/**
 * lines reads a streamed response body and calls onText(chunk) with decoded
 * text as it arrives; it returns when the body ends or signal aborts.
 */
export async function stream(res, onText, signal) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  count('streams', 1);
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
    count('streams', -1);
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
      setLive(true);
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
      setLive(false);
      setConnected(false);
    } catch (e) {
      if (e.name === 'AbortError' || signal.aborted) return;
      setLive(false);
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
