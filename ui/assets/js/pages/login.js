// pages/login.js: signing in. /ui/login lists the cluster's SSO auth
// methods (one button each) and takes a pasted token secret;
// /ui/oidc/callback is where the identity provider sends the browser back:
// it completes the OIDC login and keeps the token this browser sends.
import { get, post, auth } from '../api.js';
import { h, replace, errorBox, loading, kv } from '../dom.js';

const PENDING = 'drover.oidc';

export function render(root, _params, { signal, query }) {
  if (location.pathname.startsWith('/ui/oidc/callback')) {
    complete(root, query);
    return;
  }
  const who = h('div', { id: 'login-self' });
  const methods = h('div', { id: 'login-methods' }, loading());
  const secret = h('input', { id: 'token-secret', type: 'password', autocomplete: 'off', placeholder: 'Secret ID', 'aria-label': 'ACL token secret' });
  const tokenErr = h('div');
  const form = h('form', {
    id: 'token-form',
    onsubmit: async (e) => {
      e.preventDefault();
      const prev = auth.token;
      auth.set(secret.value.trim());
      try {
        await get('/v1/acl/token/self', { signal });
        location.assign('/ui/jobs');
      } catch (err) {
        if (prev) auth.set(prev);
        else auth.clear();
        replace(tokenErr, errorBox(err, 'That token does not work'));
      }
    },
  }, secret, ' ', h('button', { type: 'submit' }, 'Sign in with a token'), tokenErr);
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Sign in')), who,
    h('h2', null, 'Single sign-on'), methods, h('h2', null, 'ACL token'), form);

  if (auth.token) {
    get('/v1/acl/token/self', { signal }).then((t) => {
      const exp = t.ExpirationTime ? new Date(t.ExpirationTime).toLocaleString() : 'never';
      replace(who, h('div', { class: 'panel' }, kv([
        ['Signed in as', h('b', { id: 'login-name' }, t.Name || t.AccessorID)], ['Type', t.Type],
        ['Auth method', t.AuthMethod || '–'], ['Roles', (t.Roles || []).map((r) => r.Name).join(', ') || '–'],
        ['Policies', (t.Policies || []).join(', ') || '–'], ['Expires', exp],
      ]), h('button', { id: 'logout', class: 'danger', onclick: () => { auth.clear(); location.assign('/ui/login'); } }, 'Sign out')));
    }).catch((err) => replace(who, errorBox(err, 'The stored token does not work'),
      h('button', { id: 'logout', onclick: () => { auth.clear(); location.assign('/ui/login'); } }, 'Forget it')));
  }

  get('/v1/acl/auth-methods', { signal }).then((ms) => {
    const oidc = (ms || []).filter((m) => m.Type === 'OIDC');
    if (!oidc.length) {
      replace(methods, h('div', { class: 'muted' }, 'No SSO auth method is set up (drover acl auth-method create).'));
      return;
    }
    replace(methods, oidc.map((m) => h('button', {
      class: m.Default ? 'sso primary' : 'sso', id: `sso-${m.Name}`,
      onclick: (e) => start(m.Name, e.target, methods),
    }, `Sign in with ${m.DisplayName || m.Name}`)));
  }).catch((err) => replace(methods, errorBox(err, 'Could not list the auth methods')));
}

function nonce() {
  const b = new Uint8Array(24);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// start asks the agent for the provider URL and sends the browser there.
async function start(method, button, box) {
  button.disabled = true;
  const pending = { method, nonce: nonce(), redirect: `${location.origin}/ui/oidc/callback` };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  auth.clear(); // a stale token must not ride along
  try {
    const r = await post('/v1/acl/oidc/auth-url', { AuthMethodName: method, RedirectURI: pending.redirect, ClientNonce: pending.nonce });
    location.assign(r.AuthURL);
  } catch (err) {
    button.disabled = false;
    box.append(errorBox(err, 'Could not start the login'));
  }
}

// complete trades the provider's code for a drover token.
async function complete(root, query) {
  const out = h('div', { id: 'oidc-callback' }, loading('Completing the sign-in…'));
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Signing in')), out);
  let pending = null;
  try {
    pending = JSON.parse(sessionStorage.getItem(PENDING) || 'null');
  } catch {
    pending = null;
  }
  sessionStorage.removeItem(PENDING);
  const again = h('p', null, h('a', { href: '/ui/login' }, 'Start again'), '.');
  if (query.get('error')) {
    replace(out, errorBox({ code: query.get('error'), message: query.get('error_description') || 'the provider refused the login' }, 'Sign-in failed'), again);
    return;
  }
  if (!pending) {
    replace(out, errorBox({ code: 'no_login', message: 'this browser did not start a login (or already finished it)' }, 'Sign-in failed'), again);
    return;
  }
  try {
    const tok = await post('/v1/acl/oidc/complete-auth', {
      AuthMethodName: pending.method, ClientNonce: pending.nonce, State: query.get('state') || '',
      Code: query.get('code') || '', RedirectURI: pending.redirect,
    });
    auth.set(tok.SecretID);
    location.replace('/ui/jobs');
  } catch (err) {
    replace(out, errorBox(err, 'Sign-in failed'), again);
  }
}
