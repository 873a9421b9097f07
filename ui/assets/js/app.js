// app.js: the entry module. Registers the pages, starts the router, the
// shared event stream and the connection indicator.
import { route, start } from './router.js';
import { onConnection, runEventStream, probe, delay, auth, get } from './api.js';
import { mountSwitcher } from './ns.js';

route('/ui/jobs', () => import('./pages/jobs.js'), 'jobs');
route('/ui/jobs/:id', () => import('./pages/job.js'), 'jobs');
route('/ui/jobs/:id/groups/:group', () => import('./pages/group.js'), 'jobs');
route('/ui/allocations/:id', () => import('./pages/alloc.js'), 'jobs');
route('/ui/nodes', () => import('./pages/nodes.js'), 'nodes');
route('/ui/nodes/:id', () => import('./pages/node.js'), 'nodes');
route('/ui/deployments', () => import('./pages/deployments.js'), 'deployments');
route('/ui/deployments/:id', () => import('./pages/deployments.js'), 'deployments');
route('/ui/topology', () => import('./pages/topology.js'), 'topology');
route('/ui/queues', () => import('./pages/queues.js'), 'queues');
route('/ui/usage', () => import('./pages/usage.js'), 'usage');
route('/ui/servers', () => import('./pages/servers.js'), 'servers');
route('/ui/evaluations', () => import('./pages/evals.js'), 'evaluations');
route('/ui/variables', () => import('./pages/variables.js'), 'variables');
route('/ui/variables/new', () => import('./pages/variables.js'), 'variables');
route('/ui/variables/var/*path', () => import('./pages/variables.js'), 'variables');
route('/ui/run', () => import('./pages/run.js'), 'run');
route('/ui/login', () => import('./pages/login.js'), 'login');
route('/ui/oidc/callback', () => import('./pages/login.js'), 'login');

const syncNamespace = mountSwitcher(document.getElementById('ns-switch'));

function highlight(nav) {
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.nav === nav);
  syncNamespace();
}

// The indicator: "live" while the agent answers, "disconnected" as soon as a
// request or the event stream fails, "reconnected" for a while after.
const conn = document.getElementById('conn');
const banner = document.getElementById('banner');
let lostAt = 0;
let recoveredTimer = null;
const probing = new AbortController();

onConnection((ok) => {
  clearTimeout(recoveredTimer);
  if (!ok) {
    lostAt = Date.now();
    conn.className = 'conn lost';
    conn.textContent = 'disconnected';
    banner.className = 'banner';
    banner.textContent = 'Lost the connection to the drover agent. Retrying… the data below may be stale.';
    banner.hidden = false;
    probeUntilBack();
    return;
  }
  if (lostAt) {
    conn.className = 'conn ok recovered';
    conn.textContent = 'reconnected';
    banner.className = 'banner recovered';
    banner.textContent = `Connection to the agent is back (lost for ${Math.round((Date.now() - lostAt) / 1000)} s).`;
    banner.hidden = false;
    lostAt = 0;
    recoveredTimer = setTimeout(() => {
      conn.className = 'conn ok';
      conn.textContent = 'live';
      banner.hidden = true;
    }, 6000);
    return;
  }
  conn.className = 'conn ok';
  conn.textContent = 'live';
});

let probingNow = false;
async function probeUntilBack() {
  if (probingNow) return;
  probingNow = true;
  try {
    let wait = 1000;
    while (lostAt && !(await probe(probing.signal))) {
      await delay(wait, probing.signal);
      wait = Math.min(wait * 2, 5000);
    }
  } catch {
    // aborted
  } finally {
    probingNow = false;
  }
}

// The top bar names the signed-in token (or offers to sign in).
const login = document.getElementById('login');
if (auth.token) {
  get('/v1/acl/token/self').then((t) => {
    login.textContent = t?.Name || 'Signed in';
    login.title = `Signed in (${t?.Type || 'token'}); manage on the sign-in page`;
    login.classList.add('signed-in');
  }).catch(() => { login.textContent = 'Sign in'; });
}

start(highlight);
runEventStream(new AbortController().signal);
