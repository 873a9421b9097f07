// pages/servers.js: gossip members, the leader and the Raft peers.
import { get, onEvents, delay } from '../api.js';
import { h, replace, table, pill, errorBox, loading, kv } from '../dom.js';

export function render(root, _params, { signal }) {
  const out = h('div', { id: 'servers' }, loading());
  root.append(h('div', { class: 'page-head' }, h('h1', null, 'Servers')), out);

  const load = async () => {
    const res = await Promise.allSettled([
      get('/v1/agent/members', { signal }), get('/v1/status/leader', { signal }), get('/v1/status/peers', { signal }),
      get('/v1/operator/raft/configuration', { signal }),
    ]);
    if (signal.aborted) return;
    const [members, leader, peers, raft] = res;
    const leaderAddr = leader.status === 'fulfilled' ? leader.value : '';
    const parts = [];
    parts.push(h('div', { class: 'grid' }, h('div', { class: 'panel' }, kv([
      ['Leader', leader.status === 'fulfilled' ? (leaderAddr ? h('span', { class: 'mono', id: 'leader' }, leaderAddr) : pill('no leader', 'bad')) : errorBox(leader.reason)],
      ['Raft peers', peers.status === 'fulfilled' ? h('span', { class: 'mono', id: 'peers' }, (peers.value || []).join(', ') || 'none') : errorBox(peers.reason)],
      members.status === 'fulfilled' ? ['Region', members.value?.ServerRegion || '–'] : null,
      members.status === 'fulfilled' ? ['Datacenter', members.value?.ServerDC || '–'] : null,
    ]))));
    parts.push(h('h2', null, 'Members'));
    if (members.status === 'fulfilled') {
      const ms = [...(members.value?.Members || [])].sort((a, b) => a.Name.localeCompare(b.Name));
      const raftAddr = (m) => m.Tags?.raft_addr || (m.Tags?.port ? `${m.Addr}:${m.Tags.port}` : '');
      // A lone server with a known leader is the leader (dev mode's in-memory
      // Raft names the leader by server ID, not by address).
      const servers = ms.filter((m) => (m.Tags?.role || 'server') === 'server' && m.Status === 'alive');
      const isLeader = (m) => leaderAddr !== '' && (raftAddr(m) === leaderAddr || (servers.length === 1 && servers[0] === m));
      parts.push(table(['Name', 'Gossip address', 'Raft address', 'HTTP', 'Status', 'Leader', 'Region', 'Datacenter', 'Role', 'Build'], ms.map((m) => [
        h('b', null, m.Name), h('span', { class: 'mono' }, `${m.Addr}:${m.Port}`), h('span', { class: 'mono' }, raftAddr(m) || '–'),
        m.Tags?.http_addr ? h('span', { class: 'mono' }, m.Tags.http_addr) : '–', pill(m.Status), isLeader(m) ? pill('leader') : '',
        m.Tags?.region || '–', m.Tags?.dc || '–', m.Tags?.role || '–', m.Tags?.build || m.Tags?.version || '–',
      ]), { id: 'members-table', empty: 'No gossip members (a single dev agent may not gossip).' }));
    } else parts.push(errorBox(members.reason, 'Could not list members'));
    parts.push(h('h2', null, 'Raft configuration'));
    if (raft.status === 'fulfilled') {
      parts.push(table(['ID', 'Node', 'Address', 'Leader', 'Voter', 'Protocol'], (raft.value?.Servers || []).map((s) => [
        h('span', { class: 'mono' }, s.ID), s.Node, h('span', { class: 'mono' }, s.Address), s.Leader ? pill('leader') : '', s.Voter ? 'yes' : 'no', s.RaftProtocol || '–',
      ]), { id: 'raft-table' }));
    } else if (raft.reason?.status === 404 || raft.reason?.status === 405) {
      parts.push(h('div', { class: 'muted' }, 'This agent does not serve /v1/operator/raft/configuration; the peers above come from /v1/status/peers.'));
    } else parts.push(errorBox(raft.reason, 'Could not read the Raft configuration'));
    replace(out, parts);
  };

  // Membership changes are not in the event stream: refresh every 5 s.
  (async () => {
    while (!signal.aborted) {
      await load().catch((e) => { if (!signal.aborted) replace(out, errorBox(e)); });
      try {
        await delay(5000, signal);
      } catch {
        return;
      }
    }
  })();
  const off = onEvents(['Reconnect'], () => load().catch(() => {}));
  signal.addEventListener('abort', off);
}
